// webgpu.h over navigator.gpu: the "wgpu" imports of the browser build (src/gpu/web/loader.c).
// Handles are small integers into a table (0 is NULL). Structs are read at the offsets the module
// itself reports (wgt_web_layout in web/main.c), so this file never guesses the C ABI.
//
// Asynchronous calls (adapter and device requests, buffer maps, error scopes, compilation info,
// work done) return a future id and register a pending operation. wgpuInstanceProcessEvents is
// imported through WebAssembly.Suspending (JSPI): when nothing has completed yet it awaits the first
// pending operation instead of returning, so the C loop that polls never spins; then it runs the
// callbacks of every completed operation, as native webgpu.h does for AllowProcessEvents.

const FEATURES = { 0x01: 'core-features-and-limits', 0x09: 'timestamp-query', 0x0B: 'shader-f16', 0x12: 'subgroups',
  0x50034: 'chromium-experimental-subgroup-matrix' };
// WGPULimits, in declaration order (src/gpu/webgpu.h): [name, 32 or 64 bits].
const LIMITS = [['maxTextureDimension1D', 32], ['maxTextureDimension2D', 32], ['maxTextureDimension3D', 32],
  ['maxTextureArrayLayers', 32], ['maxBindGroups', 32], ['maxBindGroupsPlusVertexBuffers', 32],
  ['maxBindingsPerBindGroup', 32], ['maxDynamicUniformBuffersPerPipelineLayout', 32],
  ['maxDynamicStorageBuffersPerPipelineLayout', 32], ['maxSampledTexturesPerShaderStage', 32],
  ['maxSamplersPerShaderStage', 32], ['maxStorageBuffersPerShaderStage', 32], ['maxStorageTexturesPerShaderStage', 32],
  ['maxUniformBuffersPerShaderStage', 32], ['maxUniformBufferBindingSize', 64], ['maxStorageBufferBindingSize', 64],
  ['minUniformBufferOffsetAlignment', 32], ['minStorageBufferOffsetAlignment', 32], ['maxVertexBuffers', 32],
  ['maxBufferSize', 64], ['maxVertexAttributes', 32], ['maxVertexBufferArrayStride', 32],
  ['maxInterStageShaderVariables', 32], ['maxColorAttachments', 32], ['maxColorAttachmentBytesPerSample', 32],
  ['maxComputeWorkgroupStorageSize', 32], ['maxComputeInvocationsPerWorkgroup', 32], ['maxComputeWorkgroupSizeX', 32],
  ['maxComputeWorkgroupSizeY', 32], ['maxComputeWorkgroupSizeZ', 32], ['maxComputeWorkgroupsPerDimension', 32],
  ['maxStorageBuffersInVertexStage', 32], ['maxStorageTexturesInVertexStage', 32],
  ['maxStorageBuffersInFragmentStage', 32], ['maxStorageTexturesInFragmentStage', 32]];
const U32_UNDEF = 0xffffffff, U64_UNDEF = 0xffffffffffffffffn;
const ERROR_TYPE = { none: 1, validation: 2, oom: 3, internal: 4, unknown: 5 };

export class WebGPUImports {
  constructor({ log = () => {} } = {}) {
    this.log = log;
    this.objects = [null];
    this.freeIds = [];
    this.pending = new Set(); // {promise, ready, fire}
    this.ready = [];          // spontaneous events (device lost, uncaptured errors) to run on the next poll
    this.nextFuture = 1n;
    this.decoder = new TextDecoder();
    this.encoder = new TextEncoder();
    this.imports = this.makeImports();
  }

  // exports: the module's (memory, __indirect_function_table, wgt_web_malloc/free, wgt_web_layout).
  attach(exports) {
    this.ex = exports;
    this.memory = exports.memory;
    this.table = exports.__indirect_function_table;
    const p = exports.wgt_web_layout();
    this.L = JSON.parse(this.cstr(p));
    // WGPULimits offsets, checked against the compiler's size of the struct.
    let off = 4;
    this.limitOffsets = LIMITS.map(([name, bits]) => {
      const a = bits / 8;
      off = Math.ceil(off / a) * a;
      const r = [name, bits, off];
      off += a;
      return r;
    });
    const size = Math.ceil(off / 8) * 8;
    if (size !== this.L['sizeof.WGPULimits'])
      throw new Error(`web/wgpu.js: WGPULimits is ${this.L['sizeof.WGPULimits']} bytes in the module, ${size} here`);
  }

  // ---- memory ----
  get dv() { return new DataView(this.memory.buffer); }
  u32(p) { return this.dv.getUint32(p, true); }
  u64(p) { return this.dv.getBigUint64(p, true); }
  f64(p) { return this.dv.getFloat64(p, true); }
  cstr(p) { const u8 = new Uint8Array(this.memory.buffer); let e = p; while (u8[e]) e++; return this.decoder.decode(u8.slice(p, e)); }
  // WGPUStringView at p: NULL data is undefined; length SIZE_MAX means NUL-terminated.
  sv(p) {
    const data = this.u32(p), len = this.u32(p + this.L['WGPUStringView.length']);
    if (!data) return undefined;
    if (len === U32_UNDEF) return this.cstr(data);
    return this.decoder.decode(new Uint8Array(this.memory.buffer).slice(data, data + len));
  }
  alloc(n) { const p = this.ex.wgt_web_malloc(n) >>> 0; if (!p) throw new Error('out of memory in the module'); return p; }
  free(p) { if (p) this.ex.wgt_web_free(p); }
  // A malloc'd WGPUStringView {data, length} holding s (the data right after the view).
  newSv(s) {
    const b = this.encoder.encode(s || '');
    const p = this.alloc(8 + b.length + 1);
    new Uint8Array(this.memory.buffer).set(b, p + 8);
    new Uint8Array(this.memory.buffer)[p + 8 + b.length] = 0;
    this.dv.setUint32(p, p + 8, true);
    this.dv.setUint32(p + 4, b.length, true);
    return p;
  }
  newCStr(s) {
    const b = this.encoder.encode(s || '');
    const p = this.alloc(b.length + 1);
    const u8 = new Uint8Array(this.memory.buffer);
    u8.set(b, p);
    u8[p + b.length] = 0;
    return [p, b.length];
  }

  // ---- handles ----
  add(o) { const id = this.freeIds.length ? this.freeIds.pop() : this.objects.length; this.objects[id] = o; return id; }
  get(id) { return this.objects[id]; }
  drop(id) { if (id && this.objects[id] !== undefined) { this.objects[id] = undefined; this.freeIds.push(id); } }

  // ---- callbacks ----
  cbInfo(p) {
    return { fn: this.u32(p + this.L['WGPURequestAdapterCallbackInfo.callback']),
      u1: this.u32(p + this.L['WGPURequestAdapterCallbackInfo.userdata1']),
      u2: this.u32(p + this.L['WGPURequestAdapterCallbackInfo.userdata2']) };
  }
  call(fn, ...args) { if (fn) this.table.get(fn)(...args); }
  // Calls fn with a StringView pointer for message in the position given by build(svPtr).
  callWithMessage(fn, message, build) {
    if (!fn) return;
    const sv = this.newSv(message);
    try { this.table.get(fn)(...build(sv)); } finally { this.free(sv); }
  }
  // A pending operation: promise settles -> fire runs in the next wgpuInstanceProcessEvents.
  future(promise, fire, what = '') {
    const op = { ready: false, fire: null, what };
    op.promise = promise.then((v) => { op.ready = true; op.fire = () => fire(v, null); },
      (e) => { op.ready = true; op.fire = () => fire(null, e); });
    this.pending.add(op);
    return this.nextFuture++;
  }
  runReady() {
    const events = this.ready.splice(0);
    for (const f of events) f();
    for (const op of [...this.pending]) if (op.ready) { this.pending.delete(op); op.fire(); }
  }
  processEvents() {
    const anyReady = this.ready.length || [...this.pending].some((op) => op.ready);
    if (anyReady || !this.pending.size) { this.runReady(); return; }
    return Promise.race([...this.pending].map((op) => op.promise)).then(() => this.runReady());
  }

  readLimits(p) {
    const o = {};
    for (const [name, bits, off] of this.limitOffsets) {
      const v = bits === 32 ? this.u32(p + off) : this.u64(p + off);
      if (bits === 32 ? v !== U32_UNDEF : v !== U64_UNDEF) o[name] = Number(v);
    }
    return o;
  }
  writeLimits(p, limits) {
    const dv = this.dv;
    for (const [name, bits, off] of this.limitOffsets) {
      const v = limits[name];
      if (bits === 32) dv.setUint32(p + off, v === undefined ? U32_UNDEF : Math.min(v, U32_UNDEF), true);
      else dv.setBigUint64(p + off, v === undefined ? U64_UNDEF : BigInt(v), true);
    }
  }

  makeImports() {
    const g = this, L = () => g.L;
    const imp = {
      wgtUserAgent: (out, cap) => {
        const b = g.encoder.encode(typeof navigator !== 'undefined' ? navigator.userAgent : 'no navigator');
        const n = Math.min(b.length, cap - 1);
        new Uint8Array(g.memory.buffer).set(b.subarray(0, n), out);
        return n;
      },
      wgpuCreateInstance: () => g.add({ instance: true }),
      wgpuInstanceRelease: (id) => g.drop(id),
      wgpuInstanceProcessEvents: new WebAssembly.Suspending(() => g.processEvents()),
      wgpuInstanceRequestAdapter: (inst, opts, cb) => {
        const { fn, u1, u2 } = g.cbInfo(cb);
        const o = {};
        if (opts) {
          if (g.u32(opts + L()['WGPURequestAdapterOptions.featureLevel']) === 1) o.featureLevel = 'compatibility';
          const pp = g.u32(opts + L()['WGPURequestAdapterOptions.powerPreference']);
          if (pp) o.powerPreference = pp === 1 ? 'low-power' : 'high-performance';
          if (g.u32(opts + L()['WGPURequestAdapterOptions.forceFallbackAdapter'])) o.forceFallbackAdapter = true;
        }
        const gpu = typeof navigator !== 'undefined' ? navigator.gpu : undefined;
        const promise = gpu ? gpu.requestAdapter(o) : Promise.reject(new Error(
          'this browser has no WebGPU (navigator.gpu is undefined): use a browser with WebGPU enabled ' +
          '(Chrome/Edge 113+, or Chromium with --enable-unsafe-webgpu where the GPU is blocklisted), over https or localhost'));
        return g.future(promise, (adapter, err) => {
          const status = adapter ? 1 : err ? 4 : 3;
          const id = adapter ? g.add(adapter) : 0;
          g.callWithMessage(fn, err ? err.message : adapter ? '' : 'navigator.gpu.requestAdapter() gave no adapter',
            (sv) => [status, id, sv, u1, u2]);
        });
      },
      wgpuAdapterGetInfo: (id, p) => {
        const a = g.get(id), i = a.info || {};
        const set = (field, s) => {
          const [c, n] = g.newCStr(s);
          g.dv.setUint32(p + L()[field], c, true);
          g.dv.setUint32(p + L()[field] + 4, n, true);
        };
        set('WGPUAdapterInfo.vendor', i.vendor);
        set('WGPUAdapterInfo.architecture', i.architecture);
        set('WGPUAdapterInfo.device', i.device || i.description || [i.vendor, i.architecture].filter(Boolean).join(' '));
        set('WGPUAdapterInfo.description', i.description);
        const cpu = i.isFallbackAdapter || /swiftshader|llvmpipe|lavapipe/i.test(`${i.device} ${i.description}`);
        g.dv.setUint32(p + L()['WGPUAdapterInfo.backendType'], 2, true); // WebGPU
        g.dv.setUint32(p + L()['WGPUAdapterInfo.adapterType'], cpu ? 3 : 4, true);
        g.dv.setUint32(p + L()['WGPUAdapterInfo.vendorID'], 0, true);
        g.dv.setUint32(p + L()['WGPUAdapterInfo.deviceID'], 0, true);
        g.dv.setUint32(p + L()['WGPUAdapterInfo.subgroupMinSize'], i.subgroupMinSize || 0, true);
        g.dv.setUint32(p + L()['WGPUAdapterInfo.subgroupMaxSize'], i.subgroupMaxSize || 0, true);
        return 1;
      },
      wgpuAdapterInfoFreeMembers: (p) => {
        for (const f of ['vendor', 'architecture', 'device', 'description']) g.free(g.u32(p + L()[`WGPUAdapterInfo.${f}`]));
      },
      wgpuAdapterGetLimits: (id, p) => { g.writeLimits(p, g.get(id).limits); return 1; },
      wgpuAdapterHasFeature: (id, f) => (FEATURES[f] && g.get(id).features.has(FEATURES[f]) ? 1 : 0),
      wgpuAdapterRequestDevice: (id, d, cb) => {
        const adapter = g.get(id), { fn, u1, u2 } = g.cbInfo(cb), desc = {};
        if (d) {
          const n = g.u32(d + L()['WGPUDeviceDescriptor.requiredFeatureCount']);
          const fp = g.u32(d + L()['WGPUDeviceDescriptor.requiredFeatures']);
          desc.requiredFeatures = [];
          for (let i = 0; i < n; i++) { const f = FEATURES[g.u32(fp + 4 * i)]; if (f) desc.requiredFeatures.push(f); }
          const lp = g.u32(d + L()['WGPUDeviceDescriptor.requiredLimits']);
          if (lp) {
            const want = g.readLimits(lp);
            desc.requiredLimits = {};
            for (const k in want) if (k in adapter.limits) desc.requiredLimits[k] = want[k];
          }
          const lost = d + L()['WGPUDeviceDescriptor.deviceLostCallbackInfo'];
          desc.lost = g.cbInfo(lost);
          const ue = d + L()['WGPUDeviceDescriptor.uncapturedErrorCallbackInfo'];
          desc.uncaptured = { fn: g.u32(ue + L()['WGPUUncapturedErrorCallbackInfo.callback']),
            u1: g.u32(ue + L()['WGPUUncapturedErrorCallbackInfo.userdata1']),
            u2: g.u32(ue + L()['WGPUUncapturedErrorCallbackInfo.userdata2']) };
        }
        const { lost, uncaptured, ...gpuDesc } = desc;
        return g.future(adapter.requestDevice(gpuDesc), (device, err) => {
          let devId = 0;
          if (device) {
            devId = g.add(device);
            device.wgtQueue = g.add(device.queue);
            const devPtr = g.alloc(4);
            g.dv.setUint32(devPtr, devId, true);
            if (lost && lost.fn)
              device.lost.then((info) => g.ready.push(() => g.callWithMessage(lost.fn, info.message,
                (sv) => [devPtr, info.reason === 'destroyed' ? 2 : 1, sv, lost.u1, lost.u2])));
            if (uncaptured && uncaptured.fn)
              device.onuncapturederror = (ev) => {
                const e = ev.error, type = errorType(e);
                g.log(`WebGPU error: ${e.message}`);
                g.ready.push(() => g.callWithMessage(uncaptured.fn, e.message, (sv) => [devPtr, type, sv, uncaptured.u1, uncaptured.u2]));
              };
          }
          g.callWithMessage(fn, err ? err.message : device ? '' : 'no device', (sv) => [device ? 1 : 3, devId, sv, u1, u2]);
        });
      },
      wgpuAdapterRelease: (id) => g.drop(id),
      wgpuDeviceGetLimits: (id, p) => { g.writeLimits(p, g.get(id).limits); return 1; },
      wgpuDeviceHasFeature: (id, f) => (FEATURES[f] && g.get(id).features.has(FEATURES[f]) ? 1 : 0),
      wgpuDeviceGetQueue: (id) => g.get(id).wgtQueue,
      wgpuDeviceCreateBuffer: (id, d) => {
        try {
          const b = g.get(id).createBuffer({ label: g.sv(d + L()['WGPUBufferDescriptor.label']),
            usage: Number(g.u64(d + L()['WGPUBufferDescriptor.usage'])), size: Number(g.u64(d + L()['WGPUBufferDescriptor.size'])),
            mappedAtCreation: !!g.u32(d + L()['WGPUBufferDescriptor.mappedAtCreation']) });
          return g.add(b);
        } catch (e) { g.log(`createBuffer: ${e.message}`); return 0; }
      },
      wgpuDeviceCreateShaderModule: (id, d) => {
        const chain = g.u32(d);
        if (!chain || g.u32(chain + L()['WGPUChainedStruct.sType']) !== 2) { g.log('createShaderModule: not WGSL'); return 0; }
        return g.add(g.get(id).createShaderModule({ label: g.sv(d + L()['WGPUShaderModuleDescriptor.label']),
          code: g.sv(chain + L()['WGPUShaderSourceWGSL.code']) }));
      },
      wgpuDeviceCreateComputePipeline: (id, d) => {
        const c = d + L()['WGPUComputePipelineDescriptor.compute'];
        const layout = g.u32(d + L()['WGPUComputePipelineDescriptor.layout']);
        const n = g.u32(c + L()['WGPUComputeState.constantCount']), cp = g.u32(c + L()['WGPUComputeState.constants']);
        const constants = {};
        for (let i = 0; i < n; i++) {
          const e = cp + i * L()['sizeof.WGPUConstantEntry'];
          constants[g.sv(e + L()['WGPUConstantEntry.key'])] = g.f64(e + L()['WGPUConstantEntry.value']);
        }
        return g.add(g.get(id).createComputePipeline({ label: g.sv(d + L()['WGPUComputePipelineDescriptor.label']),
          layout: layout ? g.get(layout) : 'auto',
          compute: { module: g.get(g.u32(c + L()['WGPUComputeState.module'])),
            entryPoint: g.sv(c + L()['WGPUComputeState.entryPoint']), constants } }));
      },
      wgpuDeviceCreateBindGroupLayout: (id, d) => {
        const n = g.u32(d + L()['WGPUBindGroupLayoutDescriptor.entryCount']);
        const ep = g.u32(d + L()['WGPUBindGroupLayoutDescriptor.entries']);
        const entries = [];
        for (let i = 0; i < n; i++) {
          const e = ep + i * L()['sizeof.WGPUBindGroupLayoutEntry'], b = e + L()['WGPUBindGroupLayoutEntry.buffer'];
          const t = g.u32(b + L()['WGPUBufferBindingLayout.type']);
          const entry = { binding: g.u32(e + L()['WGPUBindGroupLayoutEntry.binding']),
            visibility: Number(g.u64(e + L()['WGPUBindGroupLayoutEntry.visibility'])) };
          if (t >= 1) entry.buffer = { type: t === 2 ? 'uniform' : t === 4 ? 'read-only-storage' : 'storage',
            hasDynamicOffset: !!g.u32(b + L()['WGPUBufferBindingLayout.hasDynamicOffset']),
            minBindingSize: Number(g.u64(b + L()['WGPUBufferBindingLayout.minBindingSize'])) };
          entries.push(entry);
        }
        return g.add(g.get(id).createBindGroupLayout({ label: g.sv(d + L()['WGPUBindGroupLayoutDescriptor.label']), entries }));
      },
      wgpuDeviceCreatePipelineLayout: (id, d) => {
        const n = g.u32(d + L()['WGPUPipelineLayoutDescriptor.bindGroupLayoutCount']);
        const lp = g.u32(d + L()['WGPUPipelineLayoutDescriptor.bindGroupLayouts']);
        const bindGroupLayouts = [];
        for (let i = 0; i < n; i++) bindGroupLayouts.push(g.get(g.u32(lp + 4 * i)));
        return g.add(g.get(id).createPipelineLayout({ label: g.sv(d + L()['WGPUPipelineLayoutDescriptor.label']), bindGroupLayouts }));
      },
      wgpuDeviceCreateBindGroup: (id, d) => {
        const n = g.u32(d + L()['WGPUBindGroupDescriptor.entryCount']), ep = g.u32(d + L()['WGPUBindGroupDescriptor.entries']);
        const entries = [];
        for (let i = 0; i < n; i++) {
          const e = ep + i * L()['sizeof.WGPUBindGroupEntry'];
          const size = g.u64(e + L()['WGPUBindGroupEntry.size']);
          const resource = { buffer: g.get(g.u32(e + L()['WGPUBindGroupEntry.buffer'])),
            offset: Number(g.u64(e + L()['WGPUBindGroupEntry.offset'])) };
          if (size !== U64_UNDEF) resource.size = Number(size);
          entries.push({ binding: g.u32(e + L()['WGPUBindGroupEntry.binding']), resource });
        }
        return g.add(g.get(id).createBindGroup({ label: g.sv(d + L()['WGPUBindGroupDescriptor.label']),
          layout: g.get(g.u32(d + L()['WGPUBindGroupDescriptor.layout'])), entries }));
      },
      wgpuDeviceCreateCommandEncoder: (id, d) => g.add(g.get(id).createCommandEncoder(d ? { label: g.sv(d + L()['WGPUCommandEncoderDescriptor.label']) } : {})),
      wgpuDeviceCreateQuerySet: (id, d) => g.add(g.get(id).createQuerySet({ label: g.sv(d + L()['WGPUQuerySetDescriptor.label']),
        type: g.u32(d + L()['WGPUQuerySetDescriptor.type']) === 2 ? 'timestamp' : 'occlusion',
        count: g.u32(d + L()['WGPUQuerySetDescriptor.count']) })),
      wgpuDevicePushErrorScope: (id, f) => g.get(id).pushErrorScope(f === 2 ? 'out-of-memory' : f === 3 ? 'internal' : 'validation'),
      wgpuDevicePopErrorScope: (id, cb) => {
        const { fn, u1, u2 } = g.cbInfo(cb);
        return g.future(g.get(id).popErrorScope(), (e, err) => {
          if (err) g.callWithMessage(fn, err.message, (sv) => [3, ERROR_TYPE.unknown, sv, u1, u2]);
          else g.callWithMessage(fn, e ? e.message : '', (sv) => [1, e ? errorType(e) : ERROR_TYPE.none, sv, u1, u2]);
        });
      },
      wgpuDeviceDestroy: (id) => g.get(id).destroy(),
      wgpuDeviceRelease: (id) => { const d = g.get(id); if (d) g.drop(d.wgtQueue); g.drop(id); },
      wgpuQueueSubmit: (id, n, p) => {
        const cmds = [];
        for (let i = 0; i < n; i++) { const c = g.u32(p + 4 * i); cmds.push(g.get(c)); }
        g.get(id).submit(cmds);
      },
      wgpuQueueWriteBuffer: (id, buf, offset, data, size) => g.get(id).writeBuffer(g.get(buf), Number(offset), g.memory.buffer, data, size),
      wgpuQueueOnSubmittedWorkDone: (id, cb) => {
        const { fn, u1, u2 } = g.cbInfo(cb);
        return g.future(g.get(id).onSubmittedWorkDone(), (v, err) =>
          g.callWithMessage(fn, err ? err.message : '', (sv) => [err ? 3 : 1, sv, u1, u2]));
      },
      wgpuQueueRelease: () => {}, // the device owns its queue's handle
      wgpuBufferMapAsync: (id, mode, offset, size, cb) => {
        const { fn, u1, u2 } = g.cbInfo(cb);
        const b = g.get(id);
        return g.future(b.mapAsync(Number(mode), offset, size), (v, err) =>
          g.callWithMessage(fn, err ? err.message : '', (sv) => [err ? (err.name === 'AbortError' ? 4 : 3) : 1, sv, u1, u2]));
      },
      // The mapped bytes live in the browser's memory, not the module's: copy them into a malloc'd
      // block, freed at unmap.
      wgpuBufferGetConstMappedRange: (id, offset, size) => {
        const b = g.get(id);
        let src;
        try { src = new Uint8Array(b.getMappedRange(offset, size)); } catch (e) { g.log(`getMappedRange: ${e.message}`); return 0; }
        const p = g.alloc(src.length || 1);
        new Uint8Array(g.memory.buffer).set(src, p);
        (b.wgtCopies ||= []).push(p);
        return p;
      },
      wgpuBufferUnmap: (id) => {
        const b = g.get(id);
        for (const p of b.wgtCopies || []) g.free(p);
        b.wgtCopies = [];
        b.unmap();
      },
      wgpuBufferDestroy: (id) => g.get(id).destroy(),
      // wgt holds one reference per handle (it never adds one), so a release is the last: destroy
      // now rather than when the garbage collector finds the buffer.
      wgpuBufferRelease: (id) => { const b = g.get(id); if (b) b.destroy(); g.drop(id); },
      wgpuShaderModuleGetCompilationInfo: (id, cb) => {
        const { fn, u1, u2 } = g.cbInfo(cb);
        return g.future(g.get(id).getCompilationInfo(), (info, err) => {
          const msgs = info ? info.messages : [], ms = L()['sizeof.WGPUCompilationMessage'];
          const arr = g.alloc(Math.max(1, msgs.length * ms)), infoPtr = g.alloc(L()['sizeof.WGPUCompilationInfo']);
          const strs = [];
          msgs.forEach((m, i) => {
            const e = arr + i * ms;
            for (let k = 0; k < ms; k++) g.dv.setUint8(e + k, 0);
            const [c, n] = g.newCStr(m.message); strs.push(c);
            g.dv.setUint32(e + L()['WGPUCompilationMessage.message'], c, true);
            g.dv.setUint32(e + L()['WGPUCompilationMessage.message'] + 4, n, true);
            g.dv.setUint32(e + L()['WGPUCompilationMessage.type'], m.type === 'error' ? 1 : m.type === 'warning' ? 2 : 3, true);
            g.dv.setBigUint64(e + L()['WGPUCompilationMessage.lineNum'], BigInt(m.lineNum), true);
            g.dv.setBigUint64(e + L()['WGPUCompilationMessage.linePos'], BigInt(m.linePos), true);
            g.dv.setBigUint64(e + L()['WGPUCompilationMessage.offset'], BigInt(m.offset), true);
            g.dv.setBigUint64(e + L()['WGPUCompilationMessage.length'], BigInt(m.length), true);
          });
          g.dv.setUint32(infoPtr, 0, true);
          g.dv.setUint32(infoPtr + L()['WGPUCompilationInfo.messageCount'], msgs.length, true);
          g.dv.setUint32(infoPtr + L()['WGPUCompilationInfo.messages'], arr, true);
          try { g.call(fn, err ? 2 : 1, infoPtr, u1, u2); } finally { strs.forEach((s) => g.free(s)); g.free(arr); g.free(infoPtr); }
        });
      },
      wgpuShaderModuleRelease: (id) => g.drop(id),
      wgpuComputePipelineRelease: (id) => g.drop(id),
      wgpuBindGroupLayoutRelease: (id) => g.drop(id),
      wgpuPipelineLayoutRelease: (id) => g.drop(id),
      wgpuBindGroupRelease: (id) => g.drop(id),
      wgpuCommandEncoderBeginComputePass: (id, d) => {
        const desc = {};
        if (d) {
          desc.label = g.sv(d + L()['WGPUComputePassDescriptor.label']);
          const tw = g.u32(d + L()['WGPUComputePassDescriptor.timestampWrites']);
          if (tw) {
            const t = { querySet: g.get(g.u32(tw + L()['WGPUPassTimestampWrites.querySet'])) };
            const b = g.u32(tw + L()['WGPUPassTimestampWrites.beginningOfPassWriteIndex']);
            const e = g.u32(tw + L()['WGPUPassTimestampWrites.endOfPassWriteIndex']);
            if (b !== U32_UNDEF) t.beginningOfPassWriteIndex = b;
            if (e !== U32_UNDEF) t.endOfPassWriteIndex = e;
            desc.timestampWrites = t;
          }
        }
        return g.add(g.get(id).beginComputePass(desc));
      },
      wgpuCommandEncoderCopyBufferToBuffer: (id, s, so, d, dso, size) =>
        g.get(id).copyBufferToBuffer(g.get(s), Number(so), g.get(d), Number(dso), Number(size)),
      wgpuCommandEncoderClearBuffer: (id, b, off, size) =>
        g.get(id).clearBuffer(g.get(b), Number(off), size === U64_UNDEF ? undefined : Number(size)),
      wgpuCommandEncoderResolveQuerySet: (id, qs, first, count, dst, off) =>
        g.get(id).resolveQuerySet(g.get(qs), first, count, g.get(dst), Number(off)),
      wgpuCommandEncoderFinish: (id, d) => g.add(g.get(id).finish()),
      wgpuCommandEncoderRelease: (id) => g.drop(id),
      wgpuCommandBufferRelease: (id) => g.drop(id),
      wgpuComputePassEncoderSetPipeline: (id, p) => g.get(id).setPipeline(g.get(p)),
      wgpuComputePassEncoderSetBindGroup: (id, i, bg, n, offs) =>
        g.get(id).setBindGroup(i, g.get(bg), n ? Array.from(new Uint32Array(g.memory.buffer, offs, n)) : []),
      wgpuComputePassEncoderDispatchWorkgroups: (id, x, y, z) => g.get(id).dispatchWorkgroups(x, y, z),
      wgpuComputePassEncoderEnd: (id) => g.get(id).end(),
      wgpuComputePassEncoderRelease: (id) => g.drop(id),
      wgpuQuerySetDestroy: (id) => g.get(id).destroy(),
      wgpuQuerySetRelease: (id) => g.drop(id),
    };
    return unsignedArgs(imp);
  }
}

// WebAssembly passes i32 arguments as signed numbers; every number webgpu.h passes is unsigned
// (pointers above 2 GiB, sizes, SIZE_MAX), so each import sees them as such. i64 ones are BigInts.
export function unsignedArgs(imports) {
  const out = {};
  for (const [k, f] of Object.entries(imports))
    out[k] = typeof f === 'function' ? (...a) => f(...a.map((x) => (typeof x === 'number' ? x >>> 0 : x))) : f;
  return out;
}

function errorType(e) {
  if (typeof GPUValidationError !== 'undefined' && e instanceof GPUValidationError) return ERROR_TYPE.validation;
  if (typeof GPUOutOfMemoryError !== 'undefined' && e instanceof GPUOutOfMemoryError) return ERROR_TYPE.oom;
  if (typeof GPUInternalError !== 'undefined' && e instanceof GPUInternalError) return ERROR_TYPE.internal;
  return ERROR_TYPE.unknown;
}
