/*
 * cublas_load.c - cuBLAS opened at run time, only when a CUDA backend is made.
 *
 * Linking libcublas costs about 200 MB of resident memory the moment the program starts (its
 * relocations and data), GPU or not: a CPU run of a CUDA-enabled build would carry that for
 * nothing. So hearth does not link it. This file defines the few cuBLAS entry points the
 * backend calls (matmul.cu) under their own names; the first call dlopens the library that
 * matches the headers' major version (RTLD_LOCAL, so its symbols never shadow these) and every
 * call forwards to the real function. When the library cannot be opened, cublasCreate fails
 * with CUBLAS_STATUS_NOT_INITIALIZED, the backend refuses to start and the log names the reason.
 */
#include <cublas_v2.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "backend/cuda/cublas_load.h"
#include "base/log.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*set_stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*sgemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float *,
                                   const float *, int, const float *, int, const float *, float *, int);
typedef cublasStatus_t (*gemm_ex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                                     const void *, cudaDataType, int, const void *, cudaDataType, int, const void *,
                                     void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

static struct {
    pthread_once_t once;
    int            ok;
    create_fn      create;
    destroy_fn     destroy;
    set_stream_fn  set_stream;
    sgemm_fn       sgemm;
    gemm_ex_fn     gemm_ex;
} lib = {.once = PTHREAD_ONCE_INIT};

static void load(void) {
    static const char *names[] = {"libcublas.so." STR(CUBLAS_VER_MAJOR), "libcublas.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof *names && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        hearth_log(HEARTH_LOG_ERROR, "cannot open cuBLAS (%s): %s", names[0], dlerror());
        return;
    }
    lib.create     = (create_fn)dlsym(h, "cublasCreate_v2");
    lib.destroy    = (destroy_fn)dlsym(h, "cublasDestroy_v2");
    lib.set_stream = (set_stream_fn)dlsym(h, "cublasSetStream_v2");
    lib.sgemm      = (sgemm_fn)dlsym(h, "cublasSgemm_v2");
    lib.gemm_ex    = (gemm_ex_fn)dlsym(h, "cublasGemmEx");
    lib.ok = lib.create && lib.destroy && lib.set_stream && lib.sgemm && lib.gemm_ex;
    if (!lib.ok) hearth_log(HEARTH_LOG_ERROR, "%s lacks an entry point hearth needs", names[0]);
}

static int loaded(void) {
    pthread_once(&lib.once, load);
    return lib.ok;
}

bool hearth_cublas_open(void) { return loaded(); }

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
    return loaded() ? lib.create(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
    return loaded() ? lib.destroy(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
    return loaded() ? lib.set_stream(handle, stream) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta,
                              float *c, int ldc) {
    return loaded() ? lib.sgemm(handle, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
                    : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *a, cudaDataType at, int lda, const void *b, cudaDataType bt,
                            int ldb, const void *beta, void *c, cudaDataType ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
    return loaded() ? lib.gemm_ex(handle, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc, compute, algo)
                    : CUBLAS_STATUS_NOT_INITIALIZED;
}
