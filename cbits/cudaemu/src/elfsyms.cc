// Names of a kernel object's static shared memory, from the symbol table of
// its image, so that a race report says "crossentropy_forward::sh+4" rather
// than an address.
#include "elfsyms.h"

#include <cxxabi.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

// in says whether [off, off+len) lies inside an image of n bytes.
static bool in(size_t off, size_t len, size_t n) { return off <= n && len <= n - off; }

static std::string demangle(const char *name) {
	int st = 0;
	char *d = abi::__cxa_demangle(name, nullptr, nullptr, &st);
	std::string out = st == 0 && d ? d : name;
	free(d);
	return out;
}

std::vector<EmuSharedSym> emu_shared_syms(const unsigned char *img, size_t n, uintptr_t base) {
	std::vector<EmuSharedSym> out;
	if (n < sizeof(Elf64_Ehdr)) return out;
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)img;
	if (h->e_shentsize != sizeof(Elf64_Shdr) || !in(h->e_shoff, (size_t)h->e_shnum * sizeof(Elf64_Shdr), n) || h->e_shstrndx >= h->e_shnum)
		return out;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + h->e_shoff);
	const Elf64_Shdr &names = sh[h->e_shstrndx];
	int shared = -1, symtab = -1;
	for (int i = 0; i < h->e_shnum; i++) {
		if (sh[i].sh_type == SHT_SYMTAB) symtab = i;
		if (in(names.sh_offset, names.sh_size, n) && sh[i].sh_name < names.sh_size &&
		    strncmp((const char *)img + names.sh_offset + sh[i].sh_name, "emu_shared", names.sh_size - sh[i].sh_name) == 0)
			shared = i;
	}
	if (shared < 0 || symtab < 0 || sh[symtab].sh_link >= h->e_shnum) return out;
	const Elf64_Shdr &st = sh[symtab], &strs = sh[st.sh_link];
	if (!in(st.sh_offset, st.sh_size, n) || !in(strs.sh_offset, strs.sh_size, n)) return out;
	const Elf64_Sym *syms = (const Elf64_Sym *)(img + st.sh_offset);
	for (size_t i = 0; i < st.sh_size / sizeof(Elf64_Sym); i++) {
		const Elf64_Sym &s = syms[i];
		if (s.st_shndx != shared || ELF64_ST_TYPE(s.st_info) != STT_OBJECT || s.st_name >= strs.sh_size) continue;
		const char *nm = (const char *)img + strs.sh_offset + s.st_name;
		if (!memchr(nm, 0, strs.sh_size - s.st_name)) continue;
		out.push_back(EmuSharedSym{base + s.st_value, s.st_size, demangle(nm)});
	}
	return out;
}
