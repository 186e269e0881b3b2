#pragma once
#define LMKIT_VERSION "0.1.0"
