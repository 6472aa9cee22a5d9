/* The process-wide engine handle of the tgt backing-store module.
 *
 * tgtd hosts any number of dedupv1 LUNs but one dedupv1_system: the first LUN
 * opened opens the system from its config file, every LUN holds a reference,
 * and the last LUN closed closes the system (flushing everything). All LUNs of
 * one tgtd must name the same config file (and the same data dir override);
 * a volume is served by at most one LUN at a time, so two LUNs never write the
 * same volume behind each other's back.
 *
 * This is the one piece of process-wide state of the module; it lives here, in
 * C++, behind a mutex, so bs_dedupv1.c stays thin glue over tgt's structures.
 * All functions are thread-safe. Errors are DEDUPV1_E* codes with a message in
 * |err| (NUL-terminated, truncated to |errlen|). */
#ifndef DEDUPV1_TARGET_ENGINE_HANDLE_H
#define DEDUPV1_TARGET_ENGINE_HANDLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/engine/dedupv1_c.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens volume |volume| of the system configured by |config_path| (|data_dir|
 * overrides the config's data dir when not NULL), opening the system first if
 * no LUN holds it. When other LUNs hold the system open, the config's volumes
 * are applied to it first (a volume added since is added, one grown grows:
 * DedupSystem::ApplyVolumes). Fails with DEDUPV1_EINVAL when the system is
 * already open from another config/data dir, when the config no longer names
 * the volume, or shrinks a volume (nothing changed); DEDUPV1_EBUSY when the
 * volume is already served. */
int dedupv1_tgt_acquire(const char* config_path, const char* data_dir, const char* volume,
                        dedupv1_volume** vol, char* err, size_t errlen);

/* Applies the config the system was opened with to it, as dedupv1_tgt_acquire
 * does (a volume grown there grows, one added is added), and sets |*size| to
 * |vol|'s size from now on. DEDUPV1_EINVAL (nothing changed) when the config
 * does not load, no longer names the volume, gives it a size that is not a
 * multiple of |block_size| (the LU's) or shrinks a volume. For tgtd's main
 * thread, which then sets the LU's capacity. */
int dedupv1_tgt_resize(dedupv1_volume* vol, uint64_t block_size, uint64_t* size, char* err, size_t errlen);

/* Drops the data of volume |volume| (dedupv1d volume remove), in the
 * background: DedupSystem::DropVolume unmaps it whole (its chunks become
 * garbage for GC) and syncs, on a thread of its own while the other LUNs
 * serve. The first call checks and starts it: no LUN may serve the volume
 * and the config must no longer name it (DEDUPV1_EINVAL), so a mistyped name
 * never drops a configured volume; it returns DEDUPV1_EBUSY while the drop
 * runs, then its result once (DEDUPV1_OK when done). Until collected, no LUN
 * may serve the volume. The engine's close stops a running drop at its next
 * step (a few blocks; the volume is then partly dropped and a new request
 * finishes it). Any LUN of the tgtd may carry the request. */
int dedupv1_tgt_drop_volume(const char* volume, char* err, size_t errlen);

/* Asks the open engine's chunk index table to grow online to at least
 * |min_bytes| bytes (0: by chunk-index.grow-factor; dedupv1d index grow).
 * Returns at once: the growth runs in the background while every LUN serves
 * (the monitor's chunk_index section shows it). DEDUPV1_EINVAL if no engine
 * is open or its table cannot grow (storage.backend = rados). Any LUN of the
 * tgtd may carry the request. */
int dedupv1_tgt_grow_index(uint64_t min_bytes, char* err, size_t errlen);

/* Closes |vol| (from dedupv1_tgt_acquire) and, when it was the last one, the
 * system. Returns the error of closing the system, if any (the volume is
 * released in any case). */
int dedupv1_tgt_release(dedupv1_volume* vol, char* err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* DEDUPV1_TARGET_ENGINE_HANDLE_H */
