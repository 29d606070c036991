/*
 * Reads an ELF64 shared object's symbol tables from its file, for the loader (loader.c).
 *
 * Why: Dawn's Node addon (npm `webgpu`, dist/linux-x64/dawn.node) holds a complete webgpu.h
 * implementation but exports none of it; its `wgpu*` functions, `dawnProcSetProcs` and
 * `dawn::native::GetProcs()` are local symbols of its (unstripped) .symtab, which dlsym cannot see.
 * Their addresses in the process are the load bias (link_map l_addr) + st_value. The file is
 * whatever WGT_WEBGPU_LIB names, so every offset is checked against the file size.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/elf.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#else
#define HOST_MACHINE EM_NONE
#endif

static int in_file(uint64_t off, uint64_t size, uint64_t file_size)
{
    return off <= file_size && size <= file_size - off;
}

/* Whether dynamic symbol i has no version (.gnu.version entry 0 or 1, or no such section). */
static int unversioned(const uint8_t *map, const Elf64_Shdr *versym, uint64_t i)
{
    if (!versym) return 1;
    if ((i + 1) * sizeof(Elf64_Half) > versym->sh_size) return 0;
    Elf64_Half v = ((const Elf64_Half *)(map + versym->sh_offset))[i] & 0x7fff;
    return v == VER_NDX_LOCAL || v == VER_NDX_GLOBAL;
}

/* Walks one symbol table (SHT_SYMTAB or SHT_DYNSYM) and fills the matches. */
static void scan_table(const uint8_t *map, uint64_t file_size, const Elf64_Shdr *sh, const Elf64_Shdr *shdrs,
                       uint16_t shnum, const Elf64_Shdr *versym, int dynamic, wgt_elf_symbols *out)
{
    if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_link >= shnum) return;
    const Elf64_Shdr *strs = &shdrs[sh->sh_link];
    if (!in_file(sh->sh_offset, sh->sh_size, file_size) || !in_file(strs->sh_offset, strs->sh_size, file_size))
        return;
    const Elf64_Sym *syms = (const Elf64_Sym *)(map + sh->sh_offset);
    const char *names = (const char *)(map + strs->sh_offset);
    uint64_t n = sh->sh_size / sizeof(Elf64_Sym);
    for (uint64_t i = 1; i < n; i++) {
        const Elf64_Sym *s = &syms[i];
        if (s->st_name >= strs->sh_size) continue;
        const char *name = names + s->st_name;
        size_t room = strs->sh_size - s->st_name;
        if (!memchr(name, 0, room)) continue; /* not terminated inside the table */
        if (dynamic && s->st_shndx == SHN_UNDEF && !strncmp(name, "napi_", 5)) out->imports_napi = 1;
        if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC || !s->st_value) continue;
        if (dynamic && !out->probe_name[0] && ELF64_ST_BIND(s->st_info) == STB_GLOBAL && unversioned(map, versym, i) &&
            strlen(name) < sizeof out->probe_name) {
            /* An exported function without a symbol version (dlsym of a versioned name may find
             * another version): dlsym finds exactly it, so it checks the load-bias arithmetic. */
            strcpy(out->probe_name, name);
            out->probe_value = s->st_value;
        }
        for (int k = 0; k < out->n; k++)
            if (!out->values[k] && !strcmp(name, out->names[k])) out->values[k] = s->st_value;
    }
}

wgt_status wgt_elf_read_symbols(const char *path, wgt_elf_symbols *out)
{
    out->imports_napi = 0;
    out->probe_name[0] = 0;
    out->probe_value = 0;
    for (int k = 0; k < out->n; k++) out->values[k] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return wgt_error(WGT_ERR_NO_DEVICE, "cannot open the WebGPU library %s (%s): run 'make deps' to fetch "
                         "Dawn, or point WGT_WEBGPU_LIB at a webgpu.h implementation", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || sb.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return wgt_error(WGT_ERR_NO_DEVICE, "the WebGPU library %s is not an ELF shared object (too short)", path);
    }
    uint64_t file_size = (uint64_t)sb.st_size;
    const uint8_t *map = mmap(NULL, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return wgt_error(WGT_ERR_NO_DEVICE, "cannot read the WebGPU library %s (%s)", path, strerror(errno));
    wgt_status st = WGT_OK;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_type != ET_DYN || eh->e_machine != HOST_MACHINE) {
        st = wgt_error(WGT_ERR_NO_DEVICE, "the WebGPU library %s is not a 64-bit little-endian ELF shared object "
                       "for this machine", path);
        goto done;
    }
    if (eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !in_file(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr), file_size)) {
        st = wgt_error(WGT_ERR_NO_DEVICE, "the WebGPU library %s has a damaged section header table", path);
        goto done;
    }
    const Elf64_Shdr *shdrs = (const Elf64_Shdr *)(map + eh->e_shoff);
    const Elf64_Shdr *versym = NULL;
    for (uint16_t i = 0; i < eh->e_shnum; i++)
        if (shdrs[i].sh_type == SHT_GNU_versym && in_file(shdrs[i].sh_offset, shdrs[i].sh_size, file_size))
            versym = &shdrs[i];
    for (uint16_t i = 0; i < eh->e_shnum; i++)
        if (shdrs[i].sh_type == SHT_DYNSYM || shdrs[i].sh_type == SHT_SYMTAB)
            scan_table(map, file_size, &shdrs[i], shdrs, eh->e_shnum, versym, shdrs[i].sh_type == SHT_DYNSYM, out);
done:
    munmap((void *)map, file_size);
    return st;
}
