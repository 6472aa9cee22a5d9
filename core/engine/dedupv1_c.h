/* The engine's C API: what the tgt backing-store module (target/bs_dedupv1.c)
 * and other C callers use. One dedupv1_system per process holds any number of
 * volumes; every function is thread-safe. Functions return 0 or a negative
 * DEDUPV1_E* code; when |err| is given, a message naming what went wrong is
 * written to it (NUL-terminated, truncated to |errlen|). */
#ifndef DEDUPV1_C_H
#define DEDUPV1_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  DEDUPV1_OK = 0,
  DEDUPV1_EINVAL = -1,   /* bad argument: offset/length out of range, bad config */
  DEDUPV1_EIO = -2,      /* I/O error from the operating system */
  DEDUPV1_ECORRUPT = -3, /* checksum mismatch: data is not returned (-> MEDIUM ERROR) */
  DEDUPV1_ENOSPC = -4,   /* disk or chunk index full (-> write error, space allocation failed) */
  DEDUPV1_ENOENT = -5,   /* unknown volume */
  DEDUPV1_EBUSY = -6,    /* data directory in use by another process */
  DEDUPV1_EOTHER = -7,
};

typedef struct dedupv1_system dedupv1_system;
typedef struct dedupv1_volume dedupv1_volume;

/* Opens (creating on first use) the system described by the config file at
 * |config_path|. |data_dir| overrides the config's data-dir when not NULL. */
int dedupv1_open(const char* config_path, const char* data_dir, dedupv1_system** sys,
                 char* err, size_t errlen);
/* Flushes everything and closes. Volumes must be closed first. */
int dedupv1_close(dedupv1_system* sys, char* err, size_t errlen);

/* Opens the volume named |name| (declared in the config). */
int dedupv1_volume_open(dedupv1_system* sys, const char* name, dedupv1_volume** vol,
                        char* err, size_t errlen);
void dedupv1_volume_close(dedupv1_volume* vol);
uint64_t dedupv1_volume_size(const dedupv1_volume* vol);
/* The volume's id in the data directory's volume table (from 1, never
 * reused: dedupv1d serves the volume as the LUN of this number). */
uint32_t dedupv1_volume_id(const dedupv1_volume* vol);
/* The volume's random 128-bit identity, made when the volume was created and
 * never changed (the module's SCSI serial and device identification). */
void dedupv1_volume_uid(const dedupv1_volume* vol, uint8_t uid[16]);

int dedupv1_read(dedupv1_volume* vol, uint64_t offset, uint64_t length, void* buf,
                 char* err, size_t errlen);
/* |fua| != 0: the data is durable when the call returns. */
int dedupv1_write(dedupv1_volume* vol, uint64_t offset, uint64_t length, const void* buf,
                  int fua, char* err, size_t errlen);
/* Deallocates the range: it reads as zeros and its space is given back. */
int dedupv1_unmap(dedupv1_volume* vol, uint64_t offset, uint64_t length, char* err, size_t errlen);
/* Makes every write acknowledged before this call durable. */
int dedupv1_sync(dedupv1_volume* vol, char* err, size_t errlen);
/* The provisioning state at |offset|: 1 if the byte at |offset| is mapped
 * (holds data), 0 if it is thin (reads zeros, no space), <0 on error. |*run|
 * receives the length of the run from |offset| (within |length|) in the same
 * state, at block granularity. */
int dedupv1_mapped(dedupv1_volume* vol, uint64_t offset, uint64_t length, uint64_t* run,
                   char* err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* DEDUPV1_C_H */
