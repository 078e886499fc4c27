/* The host's memory as Linux reports it: what the memory plan sizes itself
 * from and what /status shows. */
#ifndef SPLASH_SYSMEM_H
#define SPLASH_SYSMEM_H

#include <stdint.h>

/* MemAvailable and MemTotal from /proc/meminfo, in bytes (0 if unknown). */
void sysmem_host(uint64_t *available, uint64_t *total);
/* This process's resident set, in bytes (0 if unknown). */
uint64_t sysmem_resident(void);

#endif
