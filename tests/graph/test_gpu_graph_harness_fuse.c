/* test_gpu_graph_harness with elementwise neighbours around every op inside the capture (its own
 * process: each mode takes minutes on a CPU adapter). */
#define GRAPH_MODE HX_GRAPH_FUSE
#define TEST_NAME "test_gpu_graph_harness_fuse"
#include "test_gpu_graph_harness.c"
