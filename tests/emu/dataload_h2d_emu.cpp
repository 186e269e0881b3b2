// src/lmkit/cuda/dataload_h2d.cu against the CUDA emulator: the host-to-device stage of `lmkit dataload --device`
// (pinned staging, stream, events) runs its [cuda] round-trip test.
#include "lmkit/cuda/dataload_h2d.cu"
