// src/lmkit/cuda/device.cu against the CUDA emulator: device discovery reports the emulated device.
#include "lmkit/cuda/device.cu"
