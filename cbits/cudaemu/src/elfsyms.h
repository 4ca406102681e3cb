/* Static shared variables of a kernel object, by name. */
#ifndef CUDAEMU_ELFSYMS_H
#define CUDAEMU_ELFSYMS_H

#include "check.h"

/* emu_shared_syms lists the objects of section emu_shared in the ELF image
 * img (n bytes) loaded at base; none where the image has no symbol table. */
std::vector<EmuSharedSym> emu_shared_syms(const unsigned char *img, size_t n, uintptr_t base);

#endif
