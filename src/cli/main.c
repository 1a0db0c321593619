/* main.c - the hearth command line: verb dispatch. The only place that may exit(). */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--version")) {
        printf("hearth %s\n", HEARTH_VERSION);
        return 0;
    }
    fprintf(stderr, "hearth: no verb given (try 'hearth help')\n");
    return 2;
}
