/*
 * file.c - file.h: fopen, fstat for the size and type, one fread.
 */
#include "base/file.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

char *hearth_file_read(const char *path, size_t max, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    char *buf = NULL;
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max &&
        (buf = malloc((size_t)st.st_size + 1)) != NULL) {
        if (fread(buf, 1, (size_t)st.st_size, fp) != (size_t)st.st_size) {
            free(buf);
            buf = NULL;
        } else {
            buf[st.st_size] = 0;
            if (len) *len = (size_t)st.st_size;
        }
    }
    fclose(fp);
    return buf;
}
