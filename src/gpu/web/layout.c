/*
 * The browser build's half of the struct layout contract: web/wgpu.js reads webgpu.h structs out of
 * the module's memory at the offsets this function reports (JSON, "Struct.member": offset, and
 * "sizeof.Struct"), as measured by the compiler that built the module, so the JavaScript side never
 * hard-codes the wasm32 C ABI. Only compiled for wasm32.
 */
#if defined(__wasm__)
#include <stddef.h>
#include <stdio.h>

#include "gpu/webgpu.h"

/* Each member web/wgpu.js reads (struct, member), and each struct whose size it needs: listed once. */
#define WEB_MEMBERS(X) \
    X(WGPUStringView, length) \
    X(WGPUChainedStruct, sType) \
    X(WGPURequestAdapterOptions, featureLevel) X(WGPURequestAdapterOptions, powerPreference) \
    X(WGPURequestAdapterOptions, forceFallbackAdapter) \
    X(WGPURequestAdapterCallbackInfo, callback) X(WGPURequestAdapterCallbackInfo, userdata1) \
    X(WGPURequestAdapterCallbackInfo, userdata2) \
    X(WGPUAdapterInfo, vendor) X(WGPUAdapterInfo, architecture) X(WGPUAdapterInfo, device) \
    X(WGPUAdapterInfo, description) X(WGPUAdapterInfo, backendType) X(WGPUAdapterInfo, adapterType) \
    X(WGPUAdapterInfo, vendorID) X(WGPUAdapterInfo, deviceID) X(WGPUAdapterInfo, subgroupMinSize) \
    X(WGPUAdapterInfo, subgroupMaxSize) \
    X(WGPUDeviceDescriptor, requiredFeatureCount) X(WGPUDeviceDescriptor, requiredFeatures) \
    X(WGPUDeviceDescriptor, requiredLimits) X(WGPUDeviceDescriptor, deviceLostCallbackInfo) \
    X(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo) \
    X(WGPUUncapturedErrorCallbackInfo, callback) X(WGPUUncapturedErrorCallbackInfo, userdata1) \
    X(WGPUUncapturedErrorCallbackInfo, userdata2) \
    X(WGPUBufferDescriptor, label) X(WGPUBufferDescriptor, usage) X(WGPUBufferDescriptor, size) \
    X(WGPUBufferDescriptor, mappedAtCreation) \
    X(WGPUShaderSourceWGSL, code) \
    X(WGPUShaderModuleDescriptor, label) \
    X(WGPUCompilationMessage, message) X(WGPUCompilationMessage, type) X(WGPUCompilationMessage, lineNum) \
    X(WGPUCompilationMessage, linePos) X(WGPUCompilationMessage, offset) X(WGPUCompilationMessage, length) \
    X(WGPUCompilationInfo, messageCount) X(WGPUCompilationInfo, messages) \
    X(WGPUConstantEntry, key) X(WGPUConstantEntry, value) \
    X(WGPUComputePipelineDescriptor, label) X(WGPUComputePipelineDescriptor, layout) \
    X(WGPUComputePipelineDescriptor, compute) \
    X(WGPUComputeState, module) X(WGPUComputeState, entryPoint) X(WGPUComputeState, constantCount) \
    X(WGPUComputeState, constants) \
    X(WGPUBindGroupLayoutEntry, binding) X(WGPUBindGroupLayoutEntry, visibility) \
    X(WGPUBindGroupLayoutEntry, buffer) \
    X(WGPUBufferBindingLayout, type) X(WGPUBufferBindingLayout, hasDynamicOffset) \
    X(WGPUBufferBindingLayout, minBindingSize) \
    X(WGPUBindGroupLayoutDescriptor, label) X(WGPUBindGroupLayoutDescriptor, entryCount) \
    X(WGPUBindGroupLayoutDescriptor, entries) \
    X(WGPUPipelineLayoutDescriptor, label) X(WGPUPipelineLayoutDescriptor, bindGroupLayoutCount) \
    X(WGPUPipelineLayoutDescriptor, bindGroupLayouts) \
    X(WGPUBindGroupEntry, binding) X(WGPUBindGroupEntry, buffer) X(WGPUBindGroupEntry, offset) \
    X(WGPUBindGroupEntry, size) \
    X(WGPUBindGroupDescriptor, label) X(WGPUBindGroupDescriptor, layout) \
    X(WGPUBindGroupDescriptor, entryCount) X(WGPUBindGroupDescriptor, entries) \
    X(WGPUComputePassDescriptor, label) X(WGPUComputePassDescriptor, timestampWrites) \
    X(WGPUPassTimestampWrites, querySet) X(WGPUPassTimestampWrites, beginningOfPassWriteIndex) \
    X(WGPUPassTimestampWrites, endOfPassWriteIndex) \
    X(WGPUQuerySetDescriptor, label) X(WGPUQuerySetDescriptor, type) X(WGPUQuerySetDescriptor, count) \
    X(WGPUCommandEncoderDescriptor, label)
#define WEB_SIZES(X) \
    X(WGPUBindGroupLayoutEntry) X(WGPUBindGroupEntry) X(WGPUConstantEntry) X(WGPUCompilationMessage) \
    X(WGPUStringView) X(WGPUCompilationInfo) X(WGPUAdapterInfo) X(WGPULimits)

static const struct {
    const char *name;
    size_t value;
} entries[] = {
#define MEMBER(T, m) {#T "." #m, offsetof(T, m)},
#define SIZE(T) {"sizeof." #T, sizeof(T)},
    WEB_MEMBERS(MEMBER) WEB_SIZES(SIZE)
#undef MEMBER
#undef SIZE
};

static char json[8192];

/* Struct layouts for web/wgpu.js, measured by the compiler that built this module. */
__attribute__((export_name("wgt_web_layout"))) const char *wgt_web_layout(void)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0] && n < sizeof json; i++)
        n += (size_t)snprintf(json + n, sizeof json - n, "%s\"%s\":%zu", i ? "," : "{", entries[i].name, entries[i].value);
    if (n < sizeof json) snprintf(json + n, sizeof json - n, "}");
    return json;
}
#endif
