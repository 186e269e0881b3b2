// The emulator's <cuda_fp16.h>: __half and its conversions are declared with the rest of the emulator.
#pragma once

#include "cuda_runtime.h"
