#include "wgt.h"

const char *wgt_dtype_name(wgt_dtype dtype)
{
    static const char *names[WGT_DTYPE_COUNT] = {"f32", "f16", "bf16", "i32", "u32",
                                                 "i8",  "u8",  "bool", "i64"};
    return (unsigned)dtype < WGT_DTYPE_COUNT ? names[dtype] : "?";
}

size_t wgt_dtype_size(wgt_dtype dtype)
{
    static const size_t sizes[WGT_DTYPE_COUNT] = {4, 2, 2, 4, 4, 1, 1, 1, 8};
    return (unsigned)dtype < WGT_DTYPE_COUNT ? sizes[dtype] : 0;
}
