#include <stdio.h>

#include "commands.h"

int cmd_info(int argc, char **argv)
{
    fprintf(stderr, "wgt info: the device layer is being written\n");
    return 1;
}

int cmd_bench(int argc, char **argv)
{
    fprintf(stderr, "wgt bench: the device layer is being written\n");
    return 1;
}
