/*
 * replay.c - a main() for the fuzz targets where libFuzzer is not linked (gcc builds): it runs
 * every file named on the command line, and every regular file of every directory named there,
 * through LLVMFuzzerTestOneInput once, in name order. A broken promise aborts inside the
 * target and a memory error stops an ASan build, so the corpus replay tests that CMake
 * registers (fuzz_<what>_replay: `fuzz_<what> fuzz/corpus/<what>`) fail on any input that
 * crashes. The input is copied into a buffer of exactly its size, as libFuzzer does, so a read
 * past its end is a heap overflow ASan sees.
 *
 *   fuzz_template fuzz/corpus/template [FILE|DIR ...]
 *
 * Prints "N passed, 0 failed" (the line tests/test.h binaries end with) when all ran.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *more = realloc(buf, cap * 2);
        if (!more) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = more;
        cap *= 2;
    }
    int bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        free(buf);
        fprintf(stderr, "replay: cannot read %s\n", path);
        return -1;
    }
    uint8_t *exact = malloc(n ? n : 1); /* exactly n bytes: a read past the end is caught */
    if (!exact) {
        free(buf);
        fprintf(stderr, "replay: out of memory for %s\n", path);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Runs every regular file of dir; returns the number run, or -1 after an error. */
static int run_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open directory %s\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **more = realloc(names, cap * sizeof *names);
            if (!more) {
                rc = -1;
                break;
            }
            names = more;
        }
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) {
            rc = -1;
            break;
        }
        snprintf(names[n], len, "%s/%s", dir, de->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    int ran = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(names[i]) < 0) rc = -1;
            else ran++;
        }
        free(names[i]);
    }
    free(names);
    if (rc < 0) fprintf(stderr, "replay: could not run all of %s\n", dir);
    return rc < 0 ? -1 : ran;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    int total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s does not exist\n", argv[i]);
            return 1;
        }
        int ran = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) == 0 ? 1 : -1;
        if (ran < 0) return 1;
        total += ran;
    }
    if (total == 0) {
        fprintf(stderr, "replay: no inputs\n");
        return 1;
    }
    printf("%d passed, 0 failed\n", total);
    return 0;
}
