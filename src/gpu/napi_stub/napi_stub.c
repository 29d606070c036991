/*
 * libwgt_napi_stub.so: definitions for the Node-API functions that Dawn's Node addon (npm
 * webgpu@0.6.2, dawn.node, wgt's default WebGPU library) imports.
 *
 * Why it exists: dawn.node links against Node, which provides napi_* at run time. Outside Node its
 * dlopen fails ("undefined symbol: napi_..."), and RTLD_LAZY does not help: two of them
 * (napi_create_error, napi_create_type_error) are address relocations resolved at load time. The
 * loader (src/gpu/loader.c) loads this object with RTLD_GLOBAL first, so the names resolve. wgt uses
 * only the addon's webgpu.h functions, never its JavaScript bindings, so none of these is ever called;
 * each returns napi_generic_failure (9) should that change. Signatures do not matter to the dynamic
 * linker, only names; the list is dawn.node's undefined napi_* symbols (readelf --dyn-syms).
 * Built as its own shared object (CMakeLists.txt), never part of libwgt: libwgt exports only wgt_*.
 */
#define NAPI_STUB_FUNCTIONS(X) \
    X(napi_add_finalizer) X(napi_async_destroy) \
    X(napi_call_function) X(napi_close_callback_scope) \
    X(napi_close_escapable_handle_scope) X(napi_close_handle_scope) \
    X(napi_coerce_to_bool) X(napi_coerce_to_number) \
    X(napi_coerce_to_object) X(napi_coerce_to_string) \
    X(napi_create_array_with_length) X(napi_create_double) \
    X(napi_create_error) X(napi_create_external) \
    X(napi_create_external_arraybuffer) X(napi_create_function) \
    X(napi_create_object) X(napi_create_promise) \
    X(napi_create_range_error) X(napi_create_reference) \
    X(napi_create_string_utf8) X(napi_create_type_error) \
    X(napi_define_class) X(napi_define_properties) \
    X(napi_delete_reference) X(napi_detach_arraybuffer) \
    X(napi_escape_handle) X(napi_fatal_error) \
    X(napi_get_and_clear_last_exception) X(napi_get_array_length) \
    X(napi_get_arraybuffer_info) X(napi_get_boolean) \
    X(napi_get_cb_info) X(napi_get_element) \
    X(napi_get_global) X(napi_get_instance_data) \
    X(napi_get_last_error_info) X(napi_get_named_property) \
    X(napi_get_new_target) X(napi_get_null) \
    X(napi_get_property) X(napi_get_property_names) \
    X(napi_get_reference_value) X(napi_get_typedarray_info) \
    X(napi_get_undefined) X(napi_get_value_bool) \
    X(napi_get_value_double) X(napi_get_value_external) \
    X(napi_get_value_int32) X(napi_get_value_int64) \
    X(napi_get_value_string_utf8) X(napi_get_value_uint32) \
    X(napi_has_property) X(napi_instanceof) \
    X(napi_is_array) X(napi_is_arraybuffer) \
    X(napi_is_exception_pending) X(napi_is_typedarray) \
    X(napi_new_instance) X(napi_open_escapable_handle_scope) \
    X(napi_open_handle_scope) X(napi_reference_unref) \
    X(napi_reject_deferred) X(napi_remove_wrap) \
    X(napi_resolve_deferred) X(napi_run_script) \
    X(napi_set_element) X(napi_set_instance_data) \
    X(napi_set_named_property) X(napi_set_property) \
    X(napi_throw) X(napi_typeof) \
    X(napi_unwrap) X(napi_wrap)

#define X(name) int name(void); int name(void) { return 9; }
NAPI_STUB_FUNCTIONS(X)
#undef X
