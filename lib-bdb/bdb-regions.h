/* bdb-regions.h — back every page of a Berkeley DB environment's region
 * files with allocated blocks, so that a full file system cannot fault the
 * process.
 *
 * Berkeley DB 5.3 on Linux (HAVE_MMAP_EXTEND) maps each region file
 * (__db.NNN) at its maximum size but writes only its initial part, and grows
 * the region inside the mapping by extending the file sparsely. The first
 * touch of such a hole on a full file system is a page fault the kernel
 * cannot back: SIGBUS (seen in popstore, and in the MTA in tests/faults
 * disk-full-mta). With DB_REGION_INIT set before DB_ENV->open (which writes
 * the initial part), calling this after the open allocates each mapped
 * region file's blocks up to the end of its mapping with
 * FALLOC_FL_KEEP_SIZE: the file size, which Berkeley DB checks, does not
 * change.
 *
 * Trust boundary: home is the administrator's; the mappings are read from
 * /proc/self/maps of this process. */
#ifndef MT_BDB_REGIONS_H
#define MT_BDB_REGIONS_H

#include <stddef.h>
#include <stdint.h>

/* Allocate the blocks of every region file of the environment in home that
 * this process maps. 0, or an errno value: from realpath()/fopen(), from the
 * open()/fallocate() of the file named in failed_path (ENOSPC/EDQUOT: not
 * enough space), or ENOENT when no region file of home is mapped.
 * *regions_r and *bytes_r: the files and bytes allocated. */
int mt_bdb_prealloc_regions(const char *home, unsigned int *regions_r,
			    uint64_t *bytes_r, char *failed_path,
			    size_t failed_size);

#endif
