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

static char json[8192];

/* Struct layouts for web/wgpu.js, measured by the compiler that built this module. */
#define F(T, m) "\"" #T "." #m "\":%zu,"
#define V(T, m) offsetof(T, m)
__attribute__((export_name("wgt_web_layout"))) const char *wgt_web_layout(void)
{
    snprintf(json, sizeof json,
             "{" F(WGPUStringView, length) F(WGPUChainedStruct, sType)
             F(WGPURequestAdapterOptions, featureLevel) F(WGPURequestAdapterOptions, powerPreference)
             F(WGPURequestAdapterOptions, forceFallbackAdapter)
             F(WGPURequestAdapterCallbackInfo, callback) F(WGPURequestAdapterCallbackInfo, userdata1)
             F(WGPURequestAdapterCallbackInfo, userdata2)
             F(WGPUAdapterInfo, vendor) F(WGPUAdapterInfo, architecture) F(WGPUAdapterInfo, device)
             F(WGPUAdapterInfo, description) F(WGPUAdapterInfo, backendType) F(WGPUAdapterInfo, adapterType)
             F(WGPUAdapterInfo, vendorID) F(WGPUAdapterInfo, deviceID) F(WGPUAdapterInfo, subgroupMinSize)
             F(WGPUAdapterInfo, subgroupMaxSize)
             F(WGPUDeviceDescriptor, requiredFeatureCount) F(WGPUDeviceDescriptor, requiredFeatures)
             F(WGPUDeviceDescriptor, requiredLimits) F(WGPUDeviceDescriptor, deviceLostCallbackInfo)
             F(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo)
             F(WGPUUncapturedErrorCallbackInfo, callback) F(WGPUUncapturedErrorCallbackInfo, userdata1)
             F(WGPUUncapturedErrorCallbackInfo, userdata2)
             F(WGPUBufferDescriptor, label) F(WGPUBufferDescriptor, usage) F(WGPUBufferDescriptor, size)
             F(WGPUBufferDescriptor, mappedAtCreation)
             F(WGPUShaderSourceWGSL, code) F(WGPUShaderModuleDescriptor, label)
             F(WGPUCompilationMessage, message) F(WGPUCompilationMessage, type) F(WGPUCompilationMessage, lineNum)
             F(WGPUCompilationMessage, linePos) F(WGPUCompilationMessage, offset) F(WGPUCompilationMessage, length)
             F(WGPUCompilationInfo, messageCount) F(WGPUCompilationInfo, messages)
             F(WGPUConstantEntry, key) F(WGPUConstantEntry, value)
             F(WGPUComputePipelineDescriptor, label) F(WGPUComputePipelineDescriptor, layout)
             F(WGPUComputePipelineDescriptor, compute) F(WGPUComputeState, module) F(WGPUComputeState, entryPoint)
             F(WGPUComputeState, constantCount) F(WGPUComputeState, constants)
             F(WGPUBindGroupLayoutEntry, binding) F(WGPUBindGroupLayoutEntry, visibility)
             F(WGPUBindGroupLayoutEntry, buffer) F(WGPUBufferBindingLayout, type)
             F(WGPUBufferBindingLayout, hasDynamicOffset) F(WGPUBufferBindingLayout, minBindingSize)
             F(WGPUBindGroupLayoutDescriptor, label) F(WGPUBindGroupLayoutDescriptor, entryCount)
             F(WGPUBindGroupLayoutDescriptor, entries)
             F(WGPUPipelineLayoutDescriptor, label) F(WGPUPipelineLayoutDescriptor, bindGroupLayoutCount)
             F(WGPUPipelineLayoutDescriptor, bindGroupLayouts)
             F(WGPUBindGroupEntry, binding) F(WGPUBindGroupEntry, buffer) F(WGPUBindGroupEntry, offset)
             F(WGPUBindGroupEntry, size)
             F(WGPUBindGroupDescriptor, label) F(WGPUBindGroupDescriptor, layout) F(WGPUBindGroupDescriptor, entryCount)
             F(WGPUBindGroupDescriptor, entries)
             F(WGPUComputePassDescriptor, label) F(WGPUComputePassDescriptor, timestampWrites)
             F(WGPUPassTimestampWrites, querySet) F(WGPUPassTimestampWrites, beginningOfPassWriteIndex)
             F(WGPUPassTimestampWrites, endOfPassWriteIndex)
             F(WGPUQuerySetDescriptor, label) F(WGPUQuerySetDescriptor, type) F(WGPUQuerySetDescriptor, count)
             F(WGPUCommandEncoderDescriptor, label)
             "\"sizeof.WGPUBindGroupLayoutEntry\":%zu,\"sizeof.WGPUBindGroupEntry\":%zu,"
             "\"sizeof.WGPUConstantEntry\":%zu,\"sizeof.WGPUCompilationMessage\":%zu,\"sizeof.WGPUStringView\":%zu,"
             "\"sizeof.WGPUCompilationInfo\":%zu,\"sizeof.WGPUAdapterInfo\":%zu,\"sizeof.WGPULimits\":%zu}",
             V(WGPUStringView, length), V(WGPUChainedStruct, sType),
             V(WGPURequestAdapterOptions, featureLevel), V(WGPURequestAdapterOptions, powerPreference),
             V(WGPURequestAdapterOptions, forceFallbackAdapter),
             V(WGPURequestAdapterCallbackInfo, callback), V(WGPURequestAdapterCallbackInfo, userdata1),
             V(WGPURequestAdapterCallbackInfo, userdata2),
             V(WGPUAdapterInfo, vendor), V(WGPUAdapterInfo, architecture), V(WGPUAdapterInfo, device),
             V(WGPUAdapterInfo, description), V(WGPUAdapterInfo, backendType), V(WGPUAdapterInfo, adapterType),
             V(WGPUAdapterInfo, vendorID), V(WGPUAdapterInfo, deviceID), V(WGPUAdapterInfo, subgroupMinSize),
             V(WGPUAdapterInfo, subgroupMaxSize),
             V(WGPUDeviceDescriptor, requiredFeatureCount), V(WGPUDeviceDescriptor, requiredFeatures),
             V(WGPUDeviceDescriptor, requiredLimits), V(WGPUDeviceDescriptor, deviceLostCallbackInfo),
             V(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo),
             V(WGPUUncapturedErrorCallbackInfo, callback), V(WGPUUncapturedErrorCallbackInfo, userdata1),
             V(WGPUUncapturedErrorCallbackInfo, userdata2),
             V(WGPUBufferDescriptor, label), V(WGPUBufferDescriptor, usage), V(WGPUBufferDescriptor, size),
             V(WGPUBufferDescriptor, mappedAtCreation),
             V(WGPUShaderSourceWGSL, code), V(WGPUShaderModuleDescriptor, label),
             V(WGPUCompilationMessage, message), V(WGPUCompilationMessage, type), V(WGPUCompilationMessage, lineNum),
             V(WGPUCompilationMessage, linePos), V(WGPUCompilationMessage, offset), V(WGPUCompilationMessage, length),
             V(WGPUCompilationInfo, messageCount), V(WGPUCompilationInfo, messages),
             V(WGPUConstantEntry, key), V(WGPUConstantEntry, value),
             V(WGPUComputePipelineDescriptor, label), V(WGPUComputePipelineDescriptor, layout),
             V(WGPUComputePipelineDescriptor, compute), V(WGPUComputeState, module), V(WGPUComputeState, entryPoint),
             V(WGPUComputeState, constantCount), V(WGPUComputeState, constants),
             V(WGPUBindGroupLayoutEntry, binding), V(WGPUBindGroupLayoutEntry, visibility),
             V(WGPUBindGroupLayoutEntry, buffer), V(WGPUBufferBindingLayout, type),
             V(WGPUBufferBindingLayout, hasDynamicOffset), V(WGPUBufferBindingLayout, minBindingSize),
             V(WGPUBindGroupLayoutDescriptor, label), V(WGPUBindGroupLayoutDescriptor, entryCount),
             V(WGPUBindGroupLayoutDescriptor, entries),
             V(WGPUPipelineLayoutDescriptor, label), V(WGPUPipelineLayoutDescriptor, bindGroupLayoutCount),
             V(WGPUPipelineLayoutDescriptor, bindGroupLayouts),
             V(WGPUBindGroupEntry, binding), V(WGPUBindGroupEntry, buffer), V(WGPUBindGroupEntry, offset),
             V(WGPUBindGroupEntry, size),
             V(WGPUBindGroupDescriptor, label), V(WGPUBindGroupDescriptor, layout), V(WGPUBindGroupDescriptor, entryCount),
             V(WGPUBindGroupDescriptor, entries),
             V(WGPUComputePassDescriptor, label), V(WGPUComputePassDescriptor, timestampWrites),
             V(WGPUPassTimestampWrites, querySet), V(WGPUPassTimestampWrites, beginningOfPassWriteIndex),
             V(WGPUPassTimestampWrites, endOfPassWriteIndex),
             V(WGPUQuerySetDescriptor, label), V(WGPUQuerySetDescriptor, type), V(WGPUQuerySetDescriptor, count),
             V(WGPUCommandEncoderDescriptor, label),
             sizeof(WGPUBindGroupLayoutEntry), sizeof(WGPUBindGroupEntry), sizeof(WGPUConstantEntry),
             sizeof(WGPUCompilationMessage), sizeof(WGPUStringView), sizeof(WGPUCompilationInfo),
             sizeof(WGPUAdapterInfo), sizeof(WGPULimits));
    return json;
}
#undef F
#undef V
#endif
