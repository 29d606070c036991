// The WASI (preview 1) calls wasi-libc makes, for the browser build: stdout/stderr go to callbacks,
// files live in memory (the page puts a model's bytes at a path, the C code opens and maps it), clocks
// are performance.now() and Date.now(), random bytes come from crypto.getRandomValues. Anything else
// answers ENOSYS, which the C library reports as an ordinary error.
const E = { SUCCESS: 0, ACCES: 2, BADF: 8, EXIST: 20, INVAL: 28, ISDIR: 31, NOENT: 44, NOSYS: 52, NOTDIR: 54, SPIPE: 70 };
const FILETYPE = { CHAR: 2, DIR: 3, FILE: 4 };
const OFLAG = { CREAT: 1, DIRECTORY: 2, EXCL: 4, TRUNC: 8 };

export class ProcExit extends Error {
  constructor(code) { super(`the module exited with status ${code}`); this.code = code; }
}

export class Wasi {
  constructor({ stdout = () => {}, stderr = () => {}, env = {} } = {}) {
    this.out = { 1: stdout, 2: stderr };
    this.pendingText = { 1: '', 2: '' };
    this.env = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    this.files = new Map(); // absolute path -> Uint8Array
    this.fds = new Map([[3, { dir: '/' }]]); // 3: the preopened root
    this.nextFd = 4;
    this.memory = null;
    this.decoder = new TextDecoder();
    this.imports = this.makeImports();
  }

  setMemory(memory) { this.memory = memory; }
  putFile(path, bytes) { this.files.set(normalize(path), bytes); }
  removeFile(path) { this.files.delete(normalize(path)); }
  hasFile(path) { return this.files.has(normalize(path)); }

  get dv() { return new DataView(this.memory.buffer); }
  get u8() { return new Uint8Array(this.memory.buffer); }
  str(ptr, len) { return this.decoder.decode(this.u8.slice(ptr, ptr + len)); }

  flushText(fd, text) {
    let s = this.pendingText[fd] + text;
    let nl;
    while ((nl = s.indexOf('\n')) >= 0) { this.out[fd](s.slice(0, nl)); s = s.slice(nl + 1); }
    this.pendingText[fd] = s;
  }

  iovs(iovs, n) {
    const dv = this.dv, list = [];
    for (let i = 0; i < n; i++) list.push([dv.getUint32(iovs + 8 * i, true), dv.getUint32(iovs + 8 * i + 4, true)]);
    return list;
  }

  readInto(f, iovs, n, pos) {
    let total = 0;
    for (const [buf, len] of this.iovs(iovs, n)) {
      const take = Math.max(0, Math.min(len, f.data.length - pos));
      this.u8.set(f.data.subarray(pos, pos + take), buf);
      pos += take; total += take;
      if (take < len) break;
    }
    return total;
  }

  makeImports() {
    const w = this;
    const enosys = () => E.NOSYS;
    const strings = (list, ptrs, buf) => {
      const dv = w.dv, u8 = w.u8, enc = new TextEncoder();
      for (const s of list) {
        dv.setUint32(ptrs, buf, true); ptrs += 4;
        const b = enc.encode(s + '\0'); u8.set(b, buf); buf += b.length;
      }
      return E.SUCCESS;
    };
    const sizes = (list, countPtr, sizePtr) => {
      const enc = new TextEncoder();
      w.dv.setUint32(countPtr, list.length, true);
      w.dv.setUint32(sizePtr, list.reduce((n, s) => n + enc.encode(s).length + 1, 0), true);
      return E.SUCCESS;
    };
    const imports = {
      args_sizes_get: (c, s) => sizes(['wgt'], c, s),
      args_get: (p, b) => strings(['wgt'], p, b),
      environ_sizes_get: (c, s) => sizes(w.env, c, s),
      environ_get: (p, b) => strings(w.env, p, b),
      clock_res_get: (id, ptr) => { w.dv.setBigUint64(ptr, 1000n, true); return E.SUCCESS; },
      clock_time_get: (id, precision, ptr) => {
        const ns = id === 0 ? BigInt(Date.now()) * 1000000n : BigInt(Math.round(performance.now() * 1e6));
        w.dv.setBigUint64(ptr, ns, true);
        return E.SUCCESS;
      },
      fd_write: (fd, iovs, n, nwritten) => {
        let total = 0, text = '';
        for (const [buf, len] of w.iovs(iovs, n)) { text += w.str(buf, len); total += len; }
        if (fd === 1 || fd === 2) w.flushText(fd, text);
        else {
          const f = w.fds.get(fd);
          if (!f || !f.path) return E.BADF;
          const bytes = new TextEncoder().encode(text), end = f.pos + bytes.length;
          if (end > f.data.length) { const g = new Uint8Array(end); g.set(f.data); f.data = g; w.files.set(f.path, g); }
          f.data.set(bytes, f.pos); f.pos = end;
        }
        w.dv.setUint32(nwritten, total, true);
        return E.SUCCESS;
      },
      fd_read: (fd, iovs, n, nread) => {
        const f = w.fds.get(fd);
        if (fd === 0) { w.dv.setUint32(nread, 0, true); return E.SUCCESS; }
        if (!f || !f.path) return E.BADF;
        const got = w.readInto(f, iovs, n, f.pos);
        f.pos += got;
        w.dv.setUint32(nread, got, true);
        return E.SUCCESS;
      },
      fd_pread: (fd, iovs, n, offset, nread) => {
        const f = w.fds.get(fd);
        if (!f || !f.path) return E.BADF;
        w.dv.setUint32(nread, w.readInto(f, iovs, n, Number(offset)), true);
        return E.SUCCESS;
      },
      fd_seek: (fd, offset, whence, newPtr) => {
        const f = w.fds.get(fd);
        if (!f) return E.BADF;
        if (!f.path) return E.SPIPE;
        const base = whence === 0 ? 0 : whence === 1 ? f.pos : f.data.length;
        const pos = base + Number(offset);
        if (pos < 0) return E.INVAL;
        f.pos = pos;
        w.dv.setBigUint64(newPtr, BigInt(pos), true);
        return E.SUCCESS;
      },
      fd_tell: (fd, ptr) => {
        const f = w.fds.get(fd);
        if (!f || !f.path) return E.BADF;
        w.dv.setBigUint64(ptr, BigInt(f.pos), true);
        return E.SUCCESS;
      },
      fd_close: (fd) => (w.fds.delete(fd) ? E.SUCCESS : E.BADF),
      fd_sync: () => E.SUCCESS,
      fd_fdstat_get: (fd, ptr) => {
        const f = w.fds.get(fd);
        if (fd > 2 && !f) return E.BADF;
        const dv = w.dv;
        for (let i = 0; i < 24; i++) dv.setUint8(ptr + i, 0);
        dv.setUint8(ptr, fd <= 2 ? FILETYPE.CHAR : f.dir ? FILETYPE.DIR : FILETYPE.FILE);
        dv.setBigUint64(ptr + 8, 0xffffffffffffffffn, true);
        dv.setBigUint64(ptr + 16, 0xffffffffffffffffn, true);
        return E.SUCCESS;
      },
      fd_fdstat_set_flags: () => E.SUCCESS,
      fd_prestat_get: (fd, ptr) => {
        const f = w.fds.get(fd);
        if (fd !== 3 || !f) return E.BADF;
        w.dv.setUint8(ptr, 0);
        w.dv.setUint32(ptr + 4, 1, true);
        return E.SUCCESS;
      },
      fd_prestat_dir_name: (fd, ptr, len) => {
        if (fd !== 3) return E.BADF;
        w.u8[ptr] = 0x2f; // "/"
        return E.SUCCESS;
      },
      fd_filestat_get: (fd, ptr) => {
        const f = w.fds.get(fd);
        if (fd > 2 && !f) return E.BADF;
        writeFilestat(w.dv, ptr, fd <= 2 ? FILETYPE.CHAR : f.dir ? FILETYPE.DIR : FILETYPE.FILE, f && f.data ? f.data.length : 0);
        return E.SUCCESS;
      },
      path_filestat_get: (dirfd, flags, pathPtr, pathLen, ptr) => {
        const path = normalize('/' + w.str(pathPtr, pathLen));
        const data = w.files.get(path);
        if (data) { writeFilestat(w.dv, ptr, FILETYPE.FILE, data.length); return E.SUCCESS; }
        if (isDir(w.files, path)) { writeFilestat(w.dv, ptr, FILETYPE.DIR, 0); return E.SUCCESS; }
        return E.NOENT;
      },
      path_open: (dirfd, dirflags, pathPtr, pathLen, oflags, rightsBase, rightsInh, fdflags, fdPtr) => {
        if (!w.fds.get(dirfd)) return E.BADF;
        const path = normalize('/' + w.str(pathPtr, pathLen));
        let data = w.files.get(path);
        if (!data && isDir(w.files, path)) {
          const fd = w.nextFd++;
          w.fds.set(fd, { dir: path });
          w.dv.setUint32(fdPtr, fd, true);
          return E.SUCCESS;
        }
        if (oflags & OFLAG.DIRECTORY) return data ? E.NOTDIR : E.NOENT;
        if (data && (oflags & OFLAG.CREAT) && (oflags & OFLAG.EXCL)) return E.EXIST;
        if (!data) {
          if (!(oflags & OFLAG.CREAT)) return E.NOENT;
          data = new Uint8Array(0);
          w.files.set(path, data);
        }
        if (oflags & OFLAG.TRUNC) { data = new Uint8Array(0); w.files.set(path, data); }
        const fd = w.nextFd++;
        w.fds.set(fd, { path, data, pos: 0 });
        w.dv.setUint32(fdPtr, fd, true);
        return E.SUCCESS;
      },
      path_unlink_file: (dirfd, pathPtr, pathLen) => (w.files.delete(normalize('/' + w.str(pathPtr, pathLen))) ? E.SUCCESS : E.NOENT),
      proc_exit: (code) => { throw new ProcExit(code); },
      random_get: (ptr, len) => {
        for (let off = 0; off < len; off += 65536)
          crypto.getRandomValues(new Uint8Array(w.memory.buffer, ptr + off, Math.min(65536, len - off)));
        return E.SUCCESS;
      },
      // nanosleep: the native loops sleep between polls for callbacks from other threads; here the
      // poll itself waits (wgpuInstanceProcessEvents suspends), so a sleep returns at once.
      poll_oneoff: (inPtr, outPtr, n, neventsPtr) => {
        const dv = w.dv;
        for (let i = 0; i < n; i++) {
          const s = inPtr + 48 * i, e = outPtr + 32 * i;
          dv.setBigUint64(e, dv.getBigUint64(s, true), true);
          dv.setUint16(e + 8, 0, true);
          dv.setUint8(e + 10, dv.getUint8(s + 8));
        }
        dv.setUint32(neventsPtr, n, true);
        return E.SUCCESS;
      },
      sched_yield: () => E.SUCCESS,
    };
    const unsigned = {};
    for (const [k, f] of Object.entries(imports))
      unsigned[k] = (...a) => f(...a.map((x) => (typeof x === 'number' ? x >>> 0 : x)));
    return new Proxy(unsigned, { get: (t, k) => (k in t ? t[k] : enosys) });
  }
}

function normalize(path) {
  const parts = [];
  for (const p of path.split('/')) {
    if (!p || p === '.') continue;
    if (p === '..') parts.pop(); else parts.push(p);
  }
  return '/' + parts.join('/');
}

function isDir(files, path) {
  if (path === '/') return true;
  for (const k of files.keys()) if (k.startsWith(path + '/')) return true;
  return false;
}

function writeFilestat(dv, ptr, type, size) {
  for (let i = 0; i < 64; i++) dv.setUint8(ptr + i, 0);
  dv.setUint8(ptr + 16, type);
  dv.setBigUint64(ptr + 24, 1n, true);
  dv.setBigUint64(ptr + 32, BigInt(size), true);
}
