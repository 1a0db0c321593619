/* cublas_load.h - cuBLAS is opened on first use, not linked (cublas_load.c says why). */
#pragma once
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Open cuBLAS now if it is not open yet; false (and a logged reason) when it cannot be. */
bool hearth_cublas_open(void);

#ifdef __cplusplus
}
#endif
