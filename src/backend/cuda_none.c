/* cuda_none.c - the CUDA entry points of a build without the CUDA backend (HEARTH_CUDA off):
 * no device, and a clear reason. */
#include "backend/backend.h"

bool hearth_cuda_built(void) { return false; }
int  hearth_cuda_device_count(void) { return 0; }

hearth_backend *hearth_backend_cuda_create(int device, int64_t max_tok, const hearth_numerics *nx, hearth_err *err) {
    (void)device;
    (void)max_tok;
    (void)nx;
    hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "this hearth was built without CUDA (configure with -DHEARTH_CUDA=ON)");
    return NULL;
}
