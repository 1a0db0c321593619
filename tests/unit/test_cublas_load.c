/*
 * test_cublas_load.c - a CUDA build does not map cuBLAS until the backend asks for it
 * (src/backend/cuda/cublas_load.c), and then opens the library its headers name.
 *
 * Checked through /proc/self/maps: no libcublas mapping at start, one after hearth_cublas_open.
 * Needs no GPU (opening the library does not touch a device). A build without CUDA skips.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "test.h"
#ifdef HEARTH_HAVE_CUDA
#include "backend/cuda/cublas_load.h"

static bool mapped(const char *name) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}
#endif

TEST(cublas_mapped_only_on_demand) {
#ifndef HEARTH_HAVE_CUDA
    TEST_SKIP("built without CUDA");
#else
    CHECK(!mapped("libcublas.so"));
    CHECK(!mapped("libcublasLt.so"));
    CHECK(hearth_cublas_open());
    CHECK(mapped("libcublas.so"));
    CHECK(hearth_cublas_open()); /* once opened, stays open */
#endif
}

int main(int argc, char **argv) { return test_main(argc, argv); }
