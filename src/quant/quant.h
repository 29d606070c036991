/* Internal interface of src/quant: the public wgt_ftype_* / wgt_dequantize / wgt_quantize live in
 * wgt.h; this adds the pieces the io layer shares. */
#ifndef WGT_QUANT_QUANT_H
#define WGT_QUANT_QUANT_H

#include "wgt.h"

#endif
