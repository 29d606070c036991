/* What the layers above get from the graph layer besides the public wgt_graph_* (include/wgt.h). */
#ifndef WGT_GRAPH_GRAPH_H
#define WGT_GRAPH_GRAPH_H

#include "wgt.h"

/* wgt_graph_replay without the submit: the commands go into the context's command stream, left
 * open, and the next flush submits them together with what is recorded after (the decode loop's
 * readback of the sampled id: one submit per token). */
wgt_status wgt_graph_replay_open(wgt_graph *g, int n_inputs, const wgt_tensor *const *inputs);

/* wgt_graph_cache_run for the decode loop (src/models/generate.c): key, a value the entry must
 * match besides the inputs' dtypes and shapes (the attention split a captured step records);
 * open: a replay's commands stay in the context's open command stream (wgt_graph_replay_open).
 * how (may be NULL) gets what happened; with how given, a capture that fails after fn ran (an
 * op that cannot be captured) still hands out fn's outputs, computed eagerly, and returns WGT_OK
 * with *how WGT_GRAPH_CACHE_EAGER. */
enum { WGT_GRAPH_CACHE_EAGER, WGT_GRAPH_CACHE_CAPTURED, WGT_GRAPH_CACHE_REPLAYED };
wgt_status wgt_graph_cache_run_ex(wgt_graph_cache *c, int64_t key, int open, int n_inputs,
                                  const wgt_tensor *const *inputs, const int64_t *scalars, int max_outputs,
                                  wgt_tensor **outputs, int *n_outputs, int *how);

#endif
