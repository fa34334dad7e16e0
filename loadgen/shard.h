/* shard.h — which store shard holds a user's mailbox, for `fill --lmtp`
 * straight to the shards. The load generator links no daemon code, so this
 * is a second implementation of the rendezvous (highest random weight)
 * hash that dirsvc documents in dirsvc/README.md ("Shard assignment"):
 *
 *   score(addr, shard) = fmix64(FNV-1a-64(shard_name || 0x00 || ascii_lower(addr)))
 *   shard(addr)        = the highest score; on a tie, the smaller name (strcmp)
 *
 * The unit test pins the same values as dirsvc's (tests/unit/test-provision.c),
 * so the two cannot drift apart unnoticed.
 * Trust boundary: none (operator-given names, our own addresses). */
#ifndef LG_SHARD_H
#define LG_SHARD_H

#include <stddef.h>
#include <stdint.h>

uint64_t lg_shard_score(const char *addr, const char *shard);
/* Index of addr's shard among names[0..n), or -1 when n == 0. */
int lg_shard_pick(const char *addr, const char *const *names, size_t n);

#endif
