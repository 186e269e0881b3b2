// src/lmkit/cuda/quant_kernels.cu -- kernels and host launchers, unchanged -- built with the host compiler against the
// CUDA emulator (include/cuda_runtime.h), so the [cuda] tests of tests/unit/quant/quant_kernels_test.cpp run on it.
#include "lmkit/cuda/quant_kernels.cu"
