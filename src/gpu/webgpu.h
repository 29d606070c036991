/*
 * The subset of the webgpu.h C API that wgt uses, declared here (no header ships with Dawn's npm
 * builds). Two Dawn builds are supported and differ in ABI only where noted:
 *   - Dawn's Node addon, npm webgpu@0.6.2 (dawn.node, about October 2026): the standard webgpu.h
 *     numbering (../shared/reference/webgpu-headers-wgpu-native-29.h, dawn-2026-08.json);
 *   - npm bun-webgpu-linux-x64@0.1.7 (libwebgpu_wrapper.so): webgpu.h as Dawn had it in mid-2025
 *     (dawn-2025-06.json).
 * Every struct and enum below was compared member by member between the two API descriptions and is
 * the same in both, except: the feature numbers (not declared here: the loader picks them from one
 * table per ABI, wgt_abi in gpu.h) and WGPUInstanceDescriptor (different members of the same size;
 * wgt passes it zeroed, which means "defaults" in both). tests/gpu/test_gpu_device.c checks the
 * feature numbers against the library itself.
 * Only src/gpu/ includes this file. Functions are reached through the table in loader.c (dlopen),
 * never linked directly, so another implementation can be pointed at with WGT_WEBGPU_LIB.
 */
#ifndef WGT_GPU_WEBGPU_H
#define WGT_GPU_WEBGPU_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t WGPUFlags;
typedef uint32_t WGPUBool;

#define WGPU_STRLEN SIZE_MAX
#define WGPU_WHOLE_SIZE UINT64_MAX
#define WGPU_LIMIT_U32_UNDEFINED UINT32_MAX
#define WGPU_LIMIT_U64_UNDEFINED UINT64_MAX
#define WGPU_QUERY_SET_INDEX_UNDEFINED UINT32_MAX

typedef struct WGPUAdapterImpl *WGPUAdapter;
typedef struct WGPUBindGroupImpl *WGPUBindGroup;
typedef struct WGPUBindGroupLayoutImpl *WGPUBindGroupLayout;
typedef struct WGPUBufferImpl *WGPUBuffer;
typedef struct WGPUCommandBufferImpl *WGPUCommandBuffer;
typedef struct WGPUCommandEncoderImpl *WGPUCommandEncoder;
typedef struct WGPUComputePassEncoderImpl *WGPUComputePassEncoder;
typedef struct WGPUComputePipelineImpl *WGPUComputePipeline;
typedef struct WGPUDeviceImpl *WGPUDevice;
typedef struct WGPUInstanceImpl *WGPUInstance;
typedef struct WGPUPipelineLayoutImpl *WGPUPipelineLayout;
typedef struct WGPUQuerySetImpl *WGPUQuerySet;
typedef struct WGPUQueueImpl *WGPUQueue;
typedef struct WGPUShaderModuleImpl *WGPUShaderModule;
typedef struct WGPUSamplerImpl *WGPUSampler;
typedef struct WGPUTextureViewImpl *WGPUTextureView;
typedef struct WGPUSurfaceImpl *WGPUSurface;

typedef enum WGPUAdapterType {
    WGPUAdapterType_DiscreteGPU = 1,
    WGPUAdapterType_IntegratedGPU = 2,
    WGPUAdapterType_CPU = 3,
    WGPUAdapterType_Unknown = 4,
    WGPUAdapterType_Force32 = 0x7FFFFFFF
} WGPUAdapterType;

typedef enum WGPUBackendType {
    WGPUBackendType_Undefined = 0,
    WGPUBackendType_Null = 1,
    WGPUBackendType_WebGPU = 2,
    WGPUBackendType_D3D11 = 3,
    WGPUBackendType_D3D12 = 4,
    WGPUBackendType_Metal = 5,
    WGPUBackendType_Vulkan = 6,
    WGPUBackendType_OpenGL = 7,
    WGPUBackendType_OpenGLES = 8,
    WGPUBackendType_Force32 = 0x7FFFFFFF
} WGPUBackendType;

typedef enum WGPUBufferBindingType {
    WGPUBufferBindingType_BindingNotUsed = 0,
    WGPUBufferBindingType_Undefined = 1,
    WGPUBufferBindingType_Uniform = 2,
    WGPUBufferBindingType_Storage = 3,
    WGPUBufferBindingType_ReadOnlyStorage = 4,
    WGPUBufferBindingType_Force32 = 0x7FFFFFFF
} WGPUBufferBindingType;

typedef enum WGPUCallbackMode {
    WGPUCallbackMode_WaitAnyOnly = 1,
    WGPUCallbackMode_AllowProcessEvents = 2,
    WGPUCallbackMode_AllowSpontaneous = 3,
    WGPUCallbackMode_Force32 = 0x7FFFFFFF
} WGPUCallbackMode;

typedef enum WGPUCompilationInfoRequestStatus {
    WGPUCompilationInfoRequestStatus_Success = 1,
    WGPUCompilationInfoRequestStatus_CallbackCancelled = 2,
    WGPUCompilationInfoRequestStatus_Force32 = 0x7FFFFFFF
} WGPUCompilationInfoRequestStatus;

typedef enum WGPUCompilationMessageType {
    WGPUCompilationMessageType_Error = 1,
    WGPUCompilationMessageType_Warning = 2,
    WGPUCompilationMessageType_Info = 3,
    WGPUCompilationMessageType_Force32 = 0x7FFFFFFF
} WGPUCompilationMessageType;

typedef enum WGPUDeviceLostReason {
    WGPUDeviceLostReason_Unknown = 1,
    WGPUDeviceLostReason_Destroyed = 2,
    WGPUDeviceLostReason_CallbackCancelled = 3,
    WGPUDeviceLostReason_FailedCreation = 4,
    WGPUDeviceLostReason_Force32 = 0x7FFFFFFF
} WGPUDeviceLostReason;

typedef enum WGPUErrorFilter {
    WGPUErrorFilter_Validation = 1,
    WGPUErrorFilter_OutOfMemory = 2,
    WGPUErrorFilter_Internal = 3,
    WGPUErrorFilter_Force32 = 0x7FFFFFFF
} WGPUErrorFilter;

typedef enum WGPUErrorType {
    WGPUErrorType_NoError = 1,
    WGPUErrorType_Validation = 2,
    WGPUErrorType_OutOfMemory = 3,
    WGPUErrorType_Internal = 4,
    WGPUErrorType_Unknown = 5,
    WGPUErrorType_Force32 = 0x7FFFFFFF
} WGPUErrorType;

typedef enum WGPUFeatureLevel {
    WGPUFeatureLevel_Undefined = 0,
    WGPUFeatureLevel_Compatibility = 1,
    WGPUFeatureLevel_Core = 2,
    WGPUFeatureLevel_Force32 = 0x7FFFFFFF
} WGPUFeatureLevel;

/* Feature numbers differ between the two ABIs (TimestampQuery is 0x03 in mid-2025 Dawn, 0x09 in
 * the standard): use wgt_abi->feature_* (gpu.h), never a literal. */
typedef enum WGPUFeatureName {
    WGPUFeatureName_Force32 = 0x7FFFFFFF
} WGPUFeatureName;

typedef enum WGPUMapAsyncStatus {
    WGPUMapAsyncStatus_Success = 1,
    WGPUMapAsyncStatus_CallbackCancelled = 2,
    WGPUMapAsyncStatus_Error = 3,
    WGPUMapAsyncStatus_Aborted = 4,
    WGPUMapAsyncStatus_Force32 = 0x7FFFFFFF
} WGPUMapAsyncStatus;

typedef enum WGPUPopErrorScopeStatus {
    WGPUPopErrorScopeStatus_Success = 1,
    WGPUPopErrorScopeStatus_CallbackCancelled = 2,
    WGPUPopErrorScopeStatus_Error = 3,
    WGPUPopErrorScopeStatus_Force32 = 0x7FFFFFFF
} WGPUPopErrorScopeStatus;

typedef enum WGPUPowerPreference {
    WGPUPowerPreference_Undefined = 0,
    WGPUPowerPreference_LowPower = 1,
    WGPUPowerPreference_HighPerformance = 2,
    WGPUPowerPreference_Force32 = 0x7FFFFFFF
} WGPUPowerPreference;

typedef enum WGPUQueryType {
    WGPUQueryType_Occlusion = 1,
    WGPUQueryType_Timestamp = 2,
    WGPUQueryType_Force32 = 0x7FFFFFFF
} WGPUQueryType;

typedef enum WGPUQueueWorkDoneStatus {
    WGPUQueueWorkDoneStatus_Success = 1,
    WGPUQueueWorkDoneStatus_CallbackCancelled = 2,
    WGPUQueueWorkDoneStatus_Error = 3,
    WGPUQueueWorkDoneStatus_Force32 = 0x7FFFFFFF
} WGPUQueueWorkDoneStatus;

typedef enum WGPURequestAdapterStatus {
    WGPURequestAdapterStatus_Success = 1,
    WGPURequestAdapterStatus_CallbackCancelled = 2,
    WGPURequestAdapterStatus_Unavailable = 3,
    WGPURequestAdapterStatus_Error = 4,
    WGPURequestAdapterStatus_Force32 = 0x7FFFFFFF
} WGPURequestAdapterStatus;

typedef enum WGPURequestDeviceStatus {
    WGPURequestDeviceStatus_Success = 1,
    WGPURequestDeviceStatus_CallbackCancelled = 2,
    WGPURequestDeviceStatus_Error = 3,
    WGPURequestDeviceStatus_Force32 = 0x7FFFFFFF
} WGPURequestDeviceStatus;

typedef enum WGPUSType {
    WGPUSType_ShaderSourceWGSL = 0x02,
    WGPUSType_DawnTogglesDescriptor = 0x5000A,
    WGPUSType_AdapterPropertiesSubgroupMatrixConfigs = 0x5003B,
    WGPUSType_Force32 = 0x7FFFFFFF
} WGPUSType;

typedef enum WGPUSubgroupMatrixComponentType {
    WGPUSubgroupMatrixComponentType_F32 = 1,
    WGPUSubgroupMatrixComponentType_F16 = 2,
    WGPUSubgroupMatrixComponentType_U32 = 3,
    WGPUSubgroupMatrixComponentType_I32 = 4,
    WGPUSubgroupMatrixComponentType_U8 = 5, /* 2026 only */
    WGPUSubgroupMatrixComponentType_I8 = 6, /* 2026 only */
    WGPUSubgroupMatrixComponentType_Force32 = 0x7FFFFFFF
} WGPUSubgroupMatrixComponentType;

typedef enum WGPUStatus {
    WGPUStatus_Success = 1,
    WGPUStatus_Error = 2,
    WGPUStatus_Force32 = 0x7FFFFFFF
} WGPUStatus;

typedef enum WGPUWaitStatus {
    WGPUWaitStatus_Success = 1,
    WGPUWaitStatus_TimedOut = 2,
    WGPUWaitStatus_Error = 3,
    WGPUWaitStatus_Force32 = 0x7FFFFFFF
} WGPUWaitStatus;

/* Binding layouts for samplers and textures: wgt never uses them, but they sit inside
 * WGPUBindGroupLayoutEntry, so their size matters. */
typedef enum WGPUSamplerBindingType { WGPUSamplerBindingType_BindingNotUsed = 0 } WGPUSamplerBindingType;
typedef enum WGPUTextureSampleType { WGPUTextureSampleType_BindingNotUsed = 0 } WGPUTextureSampleType;
typedef enum WGPUTextureViewDimension { WGPUTextureViewDimension_Undefined = 0 } WGPUTextureViewDimension;
typedef enum WGPUStorageTextureAccess { WGPUStorageTextureAccess_BindingNotUsed = 0 } WGPUStorageTextureAccess;
typedef enum WGPUTextureFormat { WGPUTextureFormat_Undefined = 0 } WGPUTextureFormat;

typedef WGPUFlags WGPUBufferUsage;
#define WGPUBufferUsage_MapRead ((WGPUBufferUsage)0x0001)
#define WGPUBufferUsage_MapWrite ((WGPUBufferUsage)0x0002)
#define WGPUBufferUsage_CopySrc ((WGPUBufferUsage)0x0004)
#define WGPUBufferUsage_CopyDst ((WGPUBufferUsage)0x0008)
#define WGPUBufferUsage_Uniform ((WGPUBufferUsage)0x0040)
#define WGPUBufferUsage_Storage ((WGPUBufferUsage)0x0080)
#define WGPUBufferUsage_QueryResolve ((WGPUBufferUsage)0x0200)

typedef WGPUFlags WGPUMapMode;
#define WGPUMapMode_Read ((WGPUMapMode)0x0001)

typedef WGPUFlags WGPUShaderStage;
#define WGPUShaderStage_Compute ((WGPUShaderStage)0x0004)

typedef struct WGPUStringView {
    const char *data;
    size_t length; /* WGPU_STRLEN: NUL-terminated */
} WGPUStringView;

typedef struct WGPUChainedStruct {
    struct WGPUChainedStruct *next;
    WGPUSType sType;
} WGPUChainedStruct;

typedef struct WGPUFuture {
    uint64_t id;
} WGPUFuture;

typedef struct WGPUFutureWaitInfo {
    WGPUFuture future;
    WGPUBool completed;
} WGPUFutureWaitInfo;

struct WGPUCompilationInfo;

typedef void (*WGPUBufferMapCallback)(WGPUMapAsyncStatus status, WGPUStringView message, void *userdata1,
                                      void *userdata2);
typedef void (*WGPUCompilationInfoCallback)(WGPUCompilationInfoRequestStatus status,
                                            const struct WGPUCompilationInfo *info, void *userdata1,
                                            void *userdata2);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice *device, WGPUDeviceLostReason reason,
                                       WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPUPopErrorScopeCallback)(WGPUPopErrorScopeStatus status, WGPUErrorType type,
                                          WGPUStringView message, void *userdata1, void *userdata2);
/* This build passes a message, as the final standard does (the mid-2025 header did not). */
typedef void (*WGPUQueueWorkDoneCallback)(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *userdata1,
                                          void *userdata2);
typedef void (*WGPURequestAdapterCallback)(WGPURequestAdapterStatus status, WGPUAdapter adapter,
                                           WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPURequestDeviceCallback)(WGPURequestDeviceStatus status, WGPUDevice device,
                                          WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice *device, WGPUErrorType type,
                                            WGPUStringView message, void *userdata1, void *userdata2);

/* Every *CallbackInfo with a mode has this shape. */
#define WGT_CALLBACK_INFO(Name, Fn)                                                                \
    typedef struct Name {                                                                          \
        WGPUChainedStruct *nextInChain;                                                            \
        WGPUCallbackMode mode;                                                                     \
        Fn callback;                                                                               \
        void *userdata1;                                                                           \
        void *userdata2;                                                                           \
    } Name
WGT_CALLBACK_INFO(WGPUBufferMapCallbackInfo, WGPUBufferMapCallback);
WGT_CALLBACK_INFO(WGPUCompilationInfoCallbackInfo, WGPUCompilationInfoCallback);
WGT_CALLBACK_INFO(WGPUDeviceLostCallbackInfo, WGPUDeviceLostCallback);
WGT_CALLBACK_INFO(WGPUPopErrorScopeCallbackInfo, WGPUPopErrorScopeCallback);
WGT_CALLBACK_INFO(WGPUQueueWorkDoneCallbackInfo, WGPUQueueWorkDoneCallback);
WGT_CALLBACK_INFO(WGPURequestAdapterCallbackInfo, WGPURequestAdapterCallback);
WGT_CALLBACK_INFO(WGPURequestDeviceCallbackInfo, WGPURequestDeviceCallback);
#undef WGT_CALLBACK_INFO

typedef struct WGPUUncapturedErrorCallbackInfo {
    WGPUChainedStruct *nextInChain;
    WGPUUncapturedErrorCallback callback;
    void *userdata1;
    void *userdata2;
} WGPUUncapturedErrorCallbackInfo;

typedef struct WGPUDawnTogglesDescriptor {
    WGPUChainedStruct chain;
    size_t enabledToggleCount;
    const char *const *enabledToggles;
    size_t disabledToggleCount;
    const char *const *disabledToggles;
} WGPUDawnTogglesDescriptor;

/* Mid-2025: {nextInChain, capabilities {nextInChain, timedWaitAnyEnable, timedWaitAnyMaxCount}};
 * standard: {nextInChain, requiredFeatureCount, requiredFeatures, requiredLimits}. Both 32 bytes;
 * wgt passes it zeroed (no instance features), valid in both. */
typedef struct WGPUInstanceDescriptor {
    WGPUChainedStruct *nextInChain;
    uint64_t zeroed[3];
} WGPUInstanceDescriptor;

typedef struct WGPURequestAdapterOptions {
    WGPUChainedStruct *nextInChain;
    WGPUFeatureLevel featureLevel;
    WGPUPowerPreference powerPreference;
    WGPUBool forceFallbackAdapter;
    WGPUBackendType backendType;
    WGPUSurface compatibleSurface;
} WGPURequestAdapterOptions;

typedef struct WGPUAdapterInfo {
    WGPUChainedStruct *nextInChain;
    WGPUStringView vendor;
    WGPUStringView architecture;
    WGPUStringView device;
    WGPUStringView description;
    WGPUBackendType backendType;
    WGPUAdapterType adapterType;
    uint32_t vendorID;
    uint32_t deviceID;
    uint32_t subgroupMinSize;
    uint32_t subgroupMaxSize;
} WGPUAdapterInfo;

/* Chained (out) to WGPUAdapterInfo: the subgroup-matrix shapes an adapter supports. Dawn only. */
typedef struct WGPUSubgroupMatrixConfig {
    WGPUSubgroupMatrixComponentType componentType;
    WGPUSubgroupMatrixComponentType resultComponentType;
    uint32_t M;
    uint32_t N;
    uint32_t K;
} WGPUSubgroupMatrixConfig;

typedef struct WGPUAdapterPropertiesSubgroupMatrixConfigs {
    WGPUChainedStruct chain;
    size_t configCount;
    const WGPUSubgroupMatrixConfig *configs;
} WGPUAdapterPropertiesSubgroupMatrixConfigs;

typedef struct WGPULimits {
    WGPUChainedStruct *nextInChain;
    uint32_t maxTextureDimension1D;
    uint32_t maxTextureDimension2D;
    uint32_t maxTextureDimension3D;
    uint32_t maxTextureArrayLayers;
    uint32_t maxBindGroups;
    uint32_t maxBindGroupsPlusVertexBuffers;
    uint32_t maxBindingsPerBindGroup;
    uint32_t maxDynamicUniformBuffersPerPipelineLayout;
    uint32_t maxDynamicStorageBuffersPerPipelineLayout;
    uint32_t maxSampledTexturesPerShaderStage;
    uint32_t maxSamplersPerShaderStage;
    uint32_t maxStorageBuffersPerShaderStage;
    uint32_t maxStorageTexturesPerShaderStage;
    uint32_t maxUniformBuffersPerShaderStage;
    uint64_t maxUniformBufferBindingSize;
    uint64_t maxStorageBufferBindingSize;
    uint32_t minUniformBufferOffsetAlignment;
    uint32_t minStorageBufferOffsetAlignment;
    uint32_t maxVertexBuffers;
    uint64_t maxBufferSize;
    uint32_t maxVertexAttributes;
    uint32_t maxVertexBufferArrayStride;
    uint32_t maxInterStageShaderVariables;
    uint32_t maxColorAttachments;
    uint32_t maxColorAttachmentBytesPerSample;
    uint32_t maxComputeWorkgroupStorageSize;
    uint32_t maxComputeInvocationsPerWorkgroup;
    uint32_t maxComputeWorkgroupSizeX;
    uint32_t maxComputeWorkgroupSizeY;
    uint32_t maxComputeWorkgroupSizeZ;
    uint32_t maxComputeWorkgroupsPerDimension;
    uint32_t maxStorageBuffersInVertexStage;
    uint32_t maxStorageTexturesInVertexStage;
    uint32_t maxStorageBuffersInFragmentStage;
    uint32_t maxStorageTexturesInFragmentStage;
} WGPULimits;

typedef struct WGPUSupportedFeatures {
    size_t featureCount;
    const WGPUFeatureName *features;
} WGPUSupportedFeatures;

typedef struct WGPUQueueDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUQueueDescriptor;

typedef struct WGPUDeviceDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    size_t requiredFeatureCount;
    const WGPUFeatureName *requiredFeatures;
    const WGPULimits *requiredLimits;
    WGPUQueueDescriptor defaultQueue;
    WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
    WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPUBufferDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUBufferUsage usage;
    uint64_t size;
    WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef struct WGPUShaderSourceWGSL {
    WGPUChainedStruct chain;
    WGPUStringView code;
} WGPUShaderSourceWGSL;

typedef struct WGPUShaderModuleDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUShaderModuleDescriptor;

typedef struct WGPUCompilationMessage {
    WGPUChainedStruct *nextInChain;
    WGPUStringView message;
    WGPUCompilationMessageType type;
    uint64_t lineNum;
    uint64_t linePos;
    uint64_t offset;
    uint64_t length;
} WGPUCompilationMessage;

typedef struct WGPUCompilationInfo {
    WGPUChainedStruct *nextInChain;
    size_t messageCount;
    const WGPUCompilationMessage *messages;
} WGPUCompilationInfo;

typedef struct WGPUConstantEntry {
    WGPUChainedStruct *nextInChain;
    WGPUStringView key;
    double value;
} WGPUConstantEntry;

typedef struct WGPUComputeState {
    WGPUChainedStruct *nextInChain;
    WGPUShaderModule module;
    WGPUStringView entryPoint;
    size_t constantCount;
    const WGPUConstantEntry *constants;
} WGPUComputeState;

typedef struct WGPUComputePipelineDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUPipelineLayout layout;
    WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

typedef struct WGPUBufferBindingLayout {
    WGPUChainedStruct *nextInChain;
    WGPUBufferBindingType type;
    WGPUBool hasDynamicOffset;
    uint64_t minBindingSize;
} WGPUBufferBindingLayout;

typedef struct WGPUSamplerBindingLayout {
    WGPUChainedStruct *nextInChain;
    WGPUSamplerBindingType type;
} WGPUSamplerBindingLayout;

typedef struct WGPUTextureBindingLayout {
    WGPUChainedStruct *nextInChain;
    WGPUTextureSampleType sampleType;
    WGPUTextureViewDimension viewDimension;
    WGPUBool multisampled;
} WGPUTextureBindingLayout;

typedef struct WGPUStorageTextureBindingLayout {
    WGPUChainedStruct *nextInChain;
    WGPUStorageTextureAccess access;
    WGPUTextureFormat format;
    WGPUTextureViewDimension viewDimension;
} WGPUStorageTextureBindingLayout;

typedef struct WGPUBindGroupLayoutEntry {
    WGPUChainedStruct *nextInChain;
    uint32_t binding;
    WGPUShaderStage visibility;
    uint32_t bindingArraySize; /* in this build, not in the mid-2025 header: found by testing */
    WGPUBufferBindingLayout buffer;
    WGPUSamplerBindingLayout sampler;
    WGPUTextureBindingLayout texture;
    WGPUStorageTextureBindingLayout storageTexture;
} WGPUBindGroupLayoutEntry;

typedef struct WGPUBindGroupLayoutDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    size_t entryCount;
    const WGPUBindGroupLayoutEntry *entries;
} WGPUBindGroupLayoutDescriptor;

typedef struct WGPUPipelineLayoutDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    size_t bindGroupLayoutCount;
    const WGPUBindGroupLayout *bindGroupLayouts;
    uint32_t immediateDataRangeByteSize;
} WGPUPipelineLayoutDescriptor;

typedef struct WGPUBindGroupEntry {
    WGPUChainedStruct *nextInChain;
    uint32_t binding;
    WGPUBuffer buffer;
    uint64_t offset;
    uint64_t size;
    WGPUSampler sampler;
    WGPUTextureView textureView;
} WGPUBindGroupEntry;

typedef struct WGPUBindGroupDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUBindGroupLayout layout;
    size_t entryCount;
    const WGPUBindGroupEntry *entries;
} WGPUBindGroupDescriptor;

typedef struct WGPUCommandEncoderDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUCommandEncoderDescriptor;

typedef struct WGPUCommandBufferDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUCommandBufferDescriptor;

typedef struct WGPUPassTimestampWrites {
    WGPUChainedStruct *nextInChain;
    WGPUQuerySet querySet;
    uint32_t beginningOfPassWriteIndex;
    uint32_t endOfPassWriteIndex;
} WGPUPassTimestampWrites;

typedef struct WGPUComputePassDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    const WGPUPassTimestampWrites *timestampWrites;
} WGPUComputePassDescriptor;

typedef struct WGPUQuerySetDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUQueryType type;
    uint32_t count;
} WGPUQuerySetDescriptor;

/* The functions wgt calls: X(return type, name without the wgpu prefix, parameters). */
#define WGT_WGPU_PROCS(X)                                                                          \
    X(WGPUInstance, CreateInstance, (const WGPUInstanceDescriptor *descriptor))                    \
    X(void, InstanceRelease, (WGPUInstance instance))                                              \
    X(WGPUFuture, InstanceRequestAdapter,                                                          \
      (WGPUInstance instance, const WGPURequestAdapterOptions *options,                            \
       WGPURequestAdapterCallbackInfo callbackInfo))                                               \
    X(void, InstanceProcessEvents, (WGPUInstance instance))                                        \
    X(WGPUStatus, AdapterGetInfo, (WGPUAdapter adapter, WGPUAdapterInfo *info))                    \
    X(void, AdapterInfoFreeMembers, (WGPUAdapterInfo value))                                       \
    X(WGPUStatus, AdapterGetLimits, (WGPUAdapter adapter, WGPULimits *limits))                     \
    X(WGPUBool, AdapterHasFeature, (WGPUAdapter adapter, WGPUFeatureName feature))                 \
    X(WGPUFuture, AdapterRequestDevice,                                                            \
      (WGPUAdapter adapter, const WGPUDeviceDescriptor *descriptor,                                \
       WGPURequestDeviceCallbackInfo callbackInfo))                                                \
    X(void, AdapterRelease, (WGPUAdapter adapter))                                                 \
    X(WGPUStatus, DeviceGetLimits, (WGPUDevice device, WGPULimits *limits))                        \
    X(WGPUBool, DeviceHasFeature, (WGPUDevice device, WGPUFeatureName feature))                    \
    X(WGPUQueue, DeviceGetQueue, (WGPUDevice device))                                              \
    X(WGPUBuffer, DeviceCreateBuffer, (WGPUDevice device, const WGPUBufferDescriptor *descriptor)) \
    X(WGPUShaderModule, DeviceCreateShaderModule,                                                  \
      (WGPUDevice device, const WGPUShaderModuleDescriptor *descriptor))                           \
    X(WGPUComputePipeline, DeviceCreateComputePipeline,                                            \
      (WGPUDevice device, const WGPUComputePipelineDescriptor *descriptor))                        \
    X(WGPUBindGroupLayout, DeviceCreateBindGroupLayout,                                            \
      (WGPUDevice device, const WGPUBindGroupLayoutDescriptor *descriptor))                        \
    X(WGPUPipelineLayout, DeviceCreatePipelineLayout,                                              \
      (WGPUDevice device, const WGPUPipelineLayoutDescriptor *descriptor))                         \
    X(WGPUBindGroup, DeviceCreateBindGroup,                                                        \
      (WGPUDevice device, const WGPUBindGroupDescriptor *descriptor))                              \
    X(WGPUCommandEncoder, DeviceCreateCommandEncoder,                                              \
      (WGPUDevice device, const WGPUCommandEncoderDescriptor *descriptor))                         \
    X(WGPUQuerySet, DeviceCreateQuerySet, (WGPUDevice device, const WGPUQuerySetDescriptor *descriptor)) \
    X(void, DevicePushErrorScope, (WGPUDevice device, WGPUErrorFilter filter))                     \
    X(WGPUFuture, DevicePopErrorScope, (WGPUDevice device, WGPUPopErrorScopeCallbackInfo callbackInfo)) \
    X(void, DeviceDestroy, (WGPUDevice device))                                                    \
    X(void, DeviceRelease, (WGPUDevice device))                                                    \
    X(void, QueueSubmit, (WGPUQueue queue, size_t commandCount, const WGPUCommandBuffer *commands)) \
    X(void, QueueWriteBuffer,                                                                      \
      (WGPUQueue queue, WGPUBuffer buffer, uint64_t bufferOffset, const void *data, size_t size))  \
    X(WGPUFuture, QueueOnSubmittedWorkDone, (WGPUQueue queue, WGPUQueueWorkDoneCallbackInfo callbackInfo)) \
    X(void, QueueRelease, (WGPUQueue queue))                                                       \
    X(WGPUFuture, BufferMapAsync,                                                                  \
      (WGPUBuffer buffer, WGPUMapMode mode, size_t offset, size_t size,                            \
       WGPUBufferMapCallbackInfo callbackInfo))                                                    \
    X(const void *, BufferGetConstMappedRange, (WGPUBuffer buffer, size_t offset, size_t size))    \
    X(void, BufferUnmap, (WGPUBuffer buffer))                                                      \
    X(void, BufferDestroy, (WGPUBuffer buffer))                                                    \
    X(void, BufferRelease, (WGPUBuffer buffer))                                                    \
    X(WGPUFuture, ShaderModuleGetCompilationInfo,                                                  \
      (WGPUShaderModule module, WGPUCompilationInfoCallbackInfo callbackInfo))                     \
    X(void, ShaderModuleRelease, (WGPUShaderModule module))                                        \
    X(void, ComputePipelineRelease, (WGPUComputePipeline pipeline))                                \
    X(void, BindGroupLayoutRelease, (WGPUBindGroupLayout layout))                                  \
    X(void, PipelineLayoutRelease, (WGPUPipelineLayout layout))                                    \
    X(void, BindGroupRelease, (WGPUBindGroup group))                                               \
    X(WGPUComputePassEncoder, CommandEncoderBeginComputePass,                                      \
      (WGPUCommandEncoder encoder, const WGPUComputePassDescriptor *descriptor))                   \
    X(void, CommandEncoderCopyBufferToBuffer,                                                      \
      (WGPUCommandEncoder encoder, WGPUBuffer source, uint64_t sourceOffset, WGPUBuffer destination, \
       uint64_t destinationOffset, uint64_t size))                                                 \
    X(void, CommandEncoderClearBuffer,                                                             \
      (WGPUCommandEncoder encoder, WGPUBuffer buffer, uint64_t offset, uint64_t size))             \
    X(void, CommandEncoderResolveQuerySet,                                                         \
      (WGPUCommandEncoder encoder, WGPUQuerySet querySet, uint32_t firstQuery, uint32_t queryCount, \
       WGPUBuffer destination, uint64_t destinationOffset))                                        \
    X(WGPUCommandBuffer, CommandEncoderFinish,                                                     \
      (WGPUCommandEncoder encoder, const WGPUCommandBufferDescriptor *descriptor))                 \
    X(void, CommandEncoderRelease, (WGPUCommandEncoder encoder))                                   \
    X(void, CommandBufferRelease, (WGPUCommandBuffer commandBuffer))                               \
    X(void, ComputePassEncoderSetPipeline, (WGPUComputePassEncoder pass, WGPUComputePipeline pipeline)) \
    X(void, ComputePassEncoderSetBindGroup,                                                        \
      (WGPUComputePassEncoder pass, uint32_t groupIndex, WGPUBindGroup group,                      \
       size_t dynamicOffsetCount, const uint32_t *dynamicOffsets))                                 \
    X(void, ComputePassEncoderDispatchWorkgroups,                                                  \
      (WGPUComputePassEncoder pass, uint32_t x, uint32_t y, uint32_t z))                           \
    X(void, ComputePassEncoderEnd, (WGPUComputePassEncoder pass))                                  \
    X(void, ComputePassEncoderRelease, (WGPUComputePassEncoder pass))                              \
    X(void, QuerySetDestroy, (WGPUQuerySet querySet))                                              \
    X(void, QuerySetRelease, (WGPUQuerySet querySet))

typedef struct wgt_wgpu_procs {
#define WGT_DECLARE_PROC(ret, name, params) ret(*name) params;
    WGT_WGPU_PROCS(WGT_DECLARE_PROC)
#undef WGT_DECLARE_PROC
} wgt_wgpu_procs;

#endif
