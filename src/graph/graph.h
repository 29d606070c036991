/* What the layers above get from the graph layer besides the public wgt_graph_* (include/wgt.h). */
#ifndef WGT_GRAPH_GRAPH_H
#define WGT_GRAPH_GRAPH_H

#include "wgt.h"

/* wgt_graph_replay without the submit: the commands go into the context's command stream, left
 * open, and the next flush submits them together with what is recorded after (the decode loop's
 * readback of the sampled id: one submit per token). */
wgt_status wgt_graph_replay_open(wgt_graph *g, int n_inputs, const wgt_tensor *const *inputs);

#endif
