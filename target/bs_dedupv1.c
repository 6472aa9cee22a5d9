/*
 * bs_dedupv1: tgt backing store "dedupv1" serving dedupv1 volumes as thin
 * provisioned SCSI disks.
 *
 *   tgtadm --op new --mode logicalunit --tid T --lun L --bstype dedupv1 \
 *          --backing-store /etc/dedupv1/dedupv1.conf --bsopts "volume=NAME[;datadir=DIR]"
 *
 * tgtd dlopen()s every file in /usr/lib/tgt/backing-store at start and calls
 * its register_bs_module(); for tests the module may instead be LD_PRELOADed
 * into tgtd, where a constructor registers it (whichever copy comes first wins).
 *
 * tgt's sbc layer checks CDBs (LBA range, protection bits, write protect,
 * residuals) and hands the data commands to bs_thread's worker pool; this file
 * maps each of them onto the engine's C API (core/engine/dedupv1_c.h) and engine
 * errors onto sense data. Each LU has its own copy of tgt's sbc command table,
 * and three entries of ours are changed (see take_over_ops and
 * take_over_get_lba_status): GET LBA STATUS (tgt answers it from lseek
 * SEEK_DATA/SEEK_HOLE on an fd we do not have), COMPARE AND WRITE (left out of
 * tgt 1.0.85's table) and UNMAP (tgt's front end races on the sense buffer).
 * The LU's Block Limits VPD page gets our updater too (take_over_block_limits:
 * a finite MAXIMUM UNMAP BLOCK DESCRIPTOR COUNT).
 *
 * Threading: bs_init/bs_open/bs_close/bs_exit run on tgtd's main thread; the
 * request function runs on the LU's worker threads, concurrently. COMPARE AND
 * WRITE and ORWRITE are read-modify-write: they take the LU's ordering lock
 * exclusively while every other modifying command takes it shared, so they are
 * atomic with respect to the other writers of the LU.
 */
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "list.h"
#include "util.h"
#include "tgtd.h"
#include "scsi.h"
#include "spc.h"
#include "bs_thread.h"
#include "work.h"

#include "core/engine/dedupv1_c.h"
#include "target/engine_handle.h"

/* The tgtd symbols the module refers to as data (not through lazily bound
 * calls) are weak, so the module also loads, and then does nothing, in a
 * process that is not tgtd (a child that inherited LD_PRELOAD). */
#pragma weak nr_iothreads
#pragma weak bs_thread_cmd_submit
#define DEDUPV1_DEFAULT_IOTHREADS 16

#define DEDUPV1_BS_NAME "dedupv1"
#define DEDUPV1_MAX_VOLUME_NAME 255
#define DEDUPV1_ERRLEN 512
/* Bytes staged per engine call for WRITE SAME and VERIFY with a repeated block. */
#define DEDUPV1_STAGE_BYTES (1024 * 1024)
/* GET LBA STATUS asks the engine about at most WINDOW bytes at a time and
 * looks at no more than BUDGET bytes per command (the engine checks its block
 * index block by block; a huge uniform volume would otherwise be scanned
 * whole). A shorter extent is still a true answer: the initiator asks again
 * from where it ends. */
#define DEDUPV1_LBA_STATUS_WINDOW (1ULL << 30)
#define DEDUPV1_LBA_STATUS_BUDGET (16ULL << 30)
/* Physical block size we advertise (LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT):
 * writes aligned to it avoid read-modify-write of partial engine blocks. */
#define DEDUPV1_PHYSICAL_BLOCK 4096
/* MAXIMUM UNMAP BLOCK DESCRIPTOR COUNT we announce: as many descriptors as the
 * 16-bit PARAMETER LIST LENGTH of UNMAP can carry ((65535 - 8) / 16), so it
 * limits nothing. tgt announces FFFFFFFFh ("no limit"), which initiators that
 * keep the count in a signed int read as -1 (libiscsi 1.19's Unmap.ZeroBlocks
 * then sends a parameter list of -8 bytes). */
#define DEDUPV1_MAX_UNMAP_DESCRIPTORS 4095

/* Sense codes tgt's scsi.h does not name. */
#define DEDUPV1_ASC_UNRECOVERED_READ 0x1100
#define DEDUPV1_ASC_WRITE_ERROR 0x0c00
#define DEDUPV1_ASC_SPACE_ALLOC_FAILED_WP 0x2707
#define DEDUPV1_ASC_CAPACITY_DATA_CHANGED 0x2a09

/* `tgtadm --op update --mode logicalunit --tid T --lun L --params
 * dedupv1_resize=1`: the LU takes its volume's size and policy from the config (see
 * dedupv1_resize). */
#define DEDUPV1_RESIZE_PARAMS "dedupv1_resize=1"
/* `... --params dedupv1_drop=NAME` on any LUN of the tgtd: the data of volume
 * NAME, which no LUN serves and the config no longer names, is dropped
 * (dedupv1d volume remove; see dedupv1_tgt_drop_volume). */
#define DEDUPV1_DROP_PARAM "dedupv1_drop="
/* `... --params dedupv1_index_grow=BYTES` on any LUN: the chunk index table
 * grows online to at least BYTES (0: by its grow factor; dedupv1d index grow). */
#define DEDUPV1_INDEX_GROW_PARAM "dedupv1_index_grow="

#define DEDUPV1_MAX_SERVICE_ACTIONS 8

/* Per-LU state, tgt allocates it behind struct scsi_lu (bs_datasize). */
struct dedupv1_lu {
	struct bs_thread_info threads; /* first: BS_THREAD_I() points here */
	char volume[DEDUPV1_MAX_VOLUME_NAME + 1];
	char *data_dir;                /* bsopts datadir=, NULL if not given */
	dedupv1_volume *vol;           /* set between bs_open and bs_close */
	pthread_rwlock_t ordering;     /* see the file comment */
	/* This LU's SERVICE ACTION IN (16) table: tgt's, GET LBA STATUS ours. */
	struct service_action service_actions[DEDUPV1_MAX_SERVICE_ACTIONS + 1];
	/* tgt's updater of the Block Limits VPD page, which ours wraps. */
	void (*tgt_update_block_limits)(struct scsi_lu *lu, void *data);
	/* tgt's handler of `tgtadm --op update --mode logicalunit --params`,
	 * which ours wraps (take_over_lu_config). */
	tgtadm_err (*tgt_lu_config)(struct scsi_lu *lu, char *params);
};

static struct dedupv1_lu *DEDUPV1_LU(struct scsi_lu *lu)
{
	return (struct dedupv1_lu *)BS_THREAD_I(lu);
}

/* The LU's size as a worker thread reads it: tgtd's main thread grows it
 * while the LU serves (dedupv1_resize). */
static uint64_t lu_size(struct scsi_lu *lu)
{
	return __atomic_load_n(&lu->size, __ATOMIC_ACQUIRE);
}

enum io_kind { IO_READ, IO_WRITE };

static void set_sense(struct scsi_cmd *cmd, uint8_t key, uint16_t asc)
{
	scsi_set_result(cmd, SAM_STAT_CHECK_CONDITION);
	sense_data_build(cmd, key, asc);
}

static const char *engine_code_name(int rc)
{
	switch (rc) {
	case DEDUPV1_EINVAL: return "EINVAL";
	case DEDUPV1_EIO: return "EIO";
	case DEDUPV1_ECORRUPT: return "ECORRUPT";
	case DEDUPV1_ENOSPC: return "ENOSPC";
	case DEDUPV1_ENOENT: return "ENOENT";
	case DEDUPV1_EBUSY: return "EBUSY";
	default: return "EOTHER";
	}
}

/* Engine error -> sense data. Corrupt or unreadable data is a MEDIUM ERROR (an
 * initiator must not take it as data); a full engine is the thin-provisioning
 * "space allocation failed" condition, which Linux reports as ENOSPC. */
static void set_engine_error(struct scsi_cmd *cmd, int rc, enum io_kind kind,
			     const char *what, uint64_t offset, uint64_t length,
			     const char *err)
{
	switch (rc) {
	case DEDUPV1_ECORRUPT:
	case DEDUPV1_EIO:
		set_sense(cmd, MEDIUM_ERROR, kind == IO_READ ?
			  DEDUPV1_ASC_UNRECOVERED_READ : DEDUPV1_ASC_WRITE_ERROR);
		break;
	case DEDUPV1_ENOSPC:
		set_sense(cmd, DATA_PROTECT, DEDUPV1_ASC_SPACE_ALLOC_FAILED_WP);
		break;
	case DEDUPV1_EINVAL:
		set_sense(cmd, ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		break;
	default:
		set_sense(cmd, HARDWARE_ERROR, ASC_INTERNAL_TGT_FAILURE);
		break;
	}
	eprintf("dedupv1: %s at byte %" PRIu64 " length %" PRIu64 " of lun %" PRIu64
		" failed: %s: %s\n", what, offset, length, cmd->dev->lun,
		engine_code_name(rc), err);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* FUA bit (not in 6-byte CDBs), write-through caching (WCE off in the caching
 * mode page) and bsoflags=sync all ask for the data to be durable on return. */
static int wants_fua(struct scsi_cmd *cmd, int cdb_has_fua)
{
	struct mode_pg *caching;

	if (cmd->dev->bsoflags & O_SYNC)
		return 1;
	if (cdb_has_fua && cmd->scb[0] != WRITE_6 && (cmd->scb[1] & 0x08))
		return 1;
	caching = find_mode_page(cmd->dev, 0x08, 0);
	return caching == NULL || !(caching->mode_data[0] & 0x04);
}

static void *alloc_or_sense(struct scsi_cmd *cmd, uint64_t length)
{
	void *buf = malloc(length ? length : 1);

	if (!buf) {
		eprintf("dedupv1: out of memory for %" PRIu64 " bytes\n", length);
		set_sense(cmd, HARDWARE_ERROR, ASC_INTERNAL_TGT_FAILURE);
	}
	return buf;
}

/* Reads [offset, offset+length) and compares it with |expected|; on the first
 * difference returns 1 and its position in |*pos|, 0 if equal, -1 after
 * setting sense for an engine error. */
static int read_and_compare(struct scsi_cmd *cmd, struct dedupv1_lu *d,
			    uint64_t offset, uint64_t length,
			    const uint8_t *expected, uint64_t *pos)
{
	char err[DEDUPV1_ERRLEN] = "";
	uint8_t *buf;
	uint64_t i;
	int rc;

	buf = alloc_or_sense(cmd, length);
	if (!buf)
		return -1;
	rc = dedupv1_read(d->vol, offset, length, buf, err, sizeof(err));
	if (rc) {
		set_engine_error(cmd, rc, IO_READ, "read for compare", offset,
				 length, err);
		free(buf);
		return -1;
	}
	if (memcmp(buf, expected, length) == 0) {
		free(buf);
		return 0;
	}
	for (i = 0; i < length && buf[i] == expected[i]; i++)
		;
	*pos = i;
	free(buf);
	return 1;
}

static void do_read(struct scsi_cmd *cmd, struct dedupv1_lu *d)
{
	char err[DEDUPV1_ERRLEN] = "";
	uint64_t length = min_u64(scsi_get_in_length(cmd), cmd->tl);
	int rc;

	if (!length)
		return;
	rc = dedupv1_read(d->vol, cmd->offset, length, scsi_get_in_buffer(cmd),
			  err, sizeof(err));
	if (rc)
		set_engine_error(cmd, rc, IO_READ, "read", cmd->offset, length, err);
}

/* WRITE (6/10/12/16) and WRITE AND VERIFY (10/12/16). sbc already clamped the
 * data-out length to the transfer length. */
static void do_write(struct scsi_cmd *cmd, struct dedupv1_lu *d, int verify)
{
	char err[DEDUPV1_ERRLEN] = "";
	uint64_t length = scsi_get_out_length(cmd);
	const uint8_t *data = scsi_get_out_buffer(cmd);
	uint64_t pos;
	int rc;

	if (!length)
		return;
	pthread_rwlock_rdlock(&d->ordering);
	/* A verify reads the medium, so the data must be durable first. */
	rc = dedupv1_write(d->vol, cmd->offset, length, data,
			   verify || wants_fua(cmd, 1), err, sizeof(err));
	pthread_rwlock_unlock(&d->ordering);
	if (rc) {
		set_engine_error(cmd, rc, IO_WRITE, "write", cmd->offset, length, err);
		return;
	}
	if (verify && read_and_compare(cmd, d, cmd->offset, length, data, &pos) > 0)
		set_sense(cmd, MISCOMPARE, ASC_MISCOMPARE_DURING_VERIFY_OPERATION);
}

/* VERIFY (10/12/16). sbc hands it over only with BYTCHK set: 01b compares the
 * data-out buffer with the medium, 11b compares one data-out block with every
 * block of the range. */
static void do_verify(struct scsi_cmd *cmd, struct dedupv1_lu *d)
{
	struct scsi_lu *lu = cmd->dev;
	uint64_t blocksize = 1ULL << lu->blk_shift;
	uint64_t length = (uint64_t)scsi_rw_count(cmd->scb) << lu->blk_shift;
	uint64_t out_length = scsi_get_out_length(cmd);
	const uint8_t *data = scsi_get_out_buffer(cmd);
	int bytchk = (cmd->scb[1] >> 1) & 0x03;
	uint64_t pos, done, chunk, b;
	uint8_t *expected;
	int rc;

	if (!length)
		return;
	if (bytchk == 0x01) {
		length = min_u64(length, out_length);
		if (length && read_and_compare(cmd, d, cmd->offset, length, data, &pos) > 0)
			set_sense(cmd, MISCOMPARE,
				  ASC_MISCOMPARE_DURING_VERIFY_OPERATION);
		return;
	}
	if (bytchk != 0x03 || out_length < blocksize) {
		set_sense(cmd, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
		return;
	}
	chunk = min_u64(length, DEDUPV1_STAGE_BYTES / blocksize * blocksize);
	expected = alloc_or_sense(cmd, chunk);
	if (!expected)
		return;
	for (b = 0; b < chunk; b += blocksize)
		memcpy(expected + b, data, blocksize);
	for (done = 0; done < length; done += chunk) {
		chunk = min_u64(chunk, length - done);
		rc = read_and_compare(cmd, d, cmd->offset + done, chunk, expected, &pos);
		if (rc < 0)
			break;
		if (rc > 0) {
			set_sense(cmd, MISCOMPARE,
				  ASC_MISCOMPARE_DURING_VERIFY_OPERATION);
			break;
		}
	}
	free(expected);
}

/* COMPARE AND WRITE: the data-out buffer holds the verify blocks followed by
 * the write blocks; the write happens only when the medium equals the first. */
static void do_compare_and_write(struct scsi_cmd *cmd, struct dedupv1_lu *d)
{
	struct scsi_lu *lu = cmd->dev;
	struct vpd *limits = lu->attrs.lu_vpd[PCODE_OFFSET(0xb0)];
	char err[DEDUPV1_ERRLEN] = "";
	uint64_t length = cmd->tl;
	const uint8_t *data = scsi_get_out_buffer(cmd);
	uint64_t pos;
	int rc;

	/* The data-out buffer must hold exactly both halves (a 0-block command
	 * none), and the length must not exceed the MAXIMUM COMPARE AND WRITE
	 * LENGTH of the Block Limits VPD page. */
	if (scsi_get_out_length(cmd) != 2 * length ||
	    (limits && limits->data[1] && (length >> lu->blk_shift) > limits->data[1])) {
		set_sense(cmd, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
		return;
	}
	if (!length)
		return;
	pthread_rwlock_wrlock(&d->ordering);
	rc = read_and_compare(cmd, d, cmd->offset, length, data, &pos);
	if (rc == 0) {
		rc = dedupv1_write(d->vol, cmd->offset, length, data + length,
				   wants_fua(cmd, 1), err, sizeof(err));
		if (rc)
			set_engine_error(cmd, rc, IO_WRITE, "compare and write",
					 cmd->offset, length, err);
	} else if (rc > 0) {
		/* INFORMATION: offset of the first differing byte in the buffer. */
		scsi_set_result(cmd, SAM_STAT_CHECK_CONDITION);
		sense_data_build_with_info(cmd, MISCOMPARE,
					   ASC_MISCOMPARE_DURING_VERIFY_OPERATION, pos);
	}
	pthread_rwlock_unlock(&d->ordering);
}

/* ORWRITE (16): medium = medium OR data-out. */
static void do_orwrite(struct scsi_cmd *cmd, struct dedupv1_lu *d)
{
	char err[DEDUPV1_ERRLEN] = "";
	uint64_t length = scsi_get_out_length(cmd);
	const uint8_t *data = scsi_get_out_buffer(cmd);
	uint8_t *merged;
	uint64_t i;
	int rc;

	length = min_u64(length, cmd->tl);
	if (!length)
		return;
	merged = alloc_or_sense(cmd, length);
	if (!merged)
		return;
	pthread_rwlock_wrlock(&d->ordering);
	rc = dedupv1_read(d->vol, cmd->offset, length, merged, err, sizeof(err));
	if (rc) {
		set_engine_error(cmd, rc, IO_READ, "orwrite read", cmd->offset,
				 length, err);
	} else {
		for (i = 0; i < length; i++)
			merged[i] |= data[i];
		rc = dedupv1_write(d->vol, cmd->offset, length, merged,
				   wants_fua(cmd, 1), err, sizeof(err));
		if (rc)
			set_engine_error(cmd, rc, IO_WRITE, "orwrite", cmd->offset,
					 length, err);
	}
	pthread_rwlock_unlock(&d->ordering);
	free(merged);
}

static void stamp_lba(uint8_t *block, uint64_t lba, int lbdata, int pbdata)
{
	if (lbdata)
		put_unaligned_be32((uint32_t)lba, block);
	else if (pbdata)
		put_unaligned_be64(lba, block);
}

/* WRITE SAME (10/16). sbc checked the flags and turned a transfer length of 0
 * into "up to the end of the LU". UNMAP set: deallocate (reads return zeros,
 * LBPRZ); otherwise write the one data-out block (zeros without one) to every
 * block, stamping the LBA into it for LBDATA/PBDATA. */
static void do_write_same(struct scsi_cmd *cmd, struct dedupv1_lu *d)
{
	struct scsi_lu *lu = cmd->dev;
	uint64_t blocksize = 1ULL << lu->blk_shift;
	uint64_t length = cmd->tl;
	int lbdata = (cmd->scb[1] & 0x06) == 0x02;
	int pbdata = (cmd->scb[1] & 0x06) == 0x04;
	int fua = wants_fua(cmd, 0);
	char err[DEDUPV1_ERRLEN] = "";
	uint64_t done, chunk, b;
	uint8_t *stage;
	int rc = 0;

	if (!length)
		return;
	if (cmd->scb[1] & 0x08) {
		pthread_rwlock_rdlock(&d->ordering);
		rc = dedupv1_unmap(d->vol, cmd->offset, length, err, sizeof(err));
		pthread_rwlock_unlock(&d->ordering);
		if (rc)
			set_engine_error(cmd, rc, IO_WRITE, "write same unmap",
					 cmd->offset, length, err);
		return;
	}

	chunk = min_u64(length, DEDUPV1_STAGE_BYTES / blocksize * blocksize);
	stage = alloc_or_sense(cmd, chunk);
	if (!stage)
		return;
	if (scsi_get_out_length(cmd) >= blocksize) {
		for (b = 0; b < chunk; b += blocksize)
			memcpy(stage + b, scsi_get_out_buffer(cmd), blocksize);
	} else {
		memset(stage, 0, chunk);
	}
	pthread_rwlock_rdlock(&d->ordering);
	for (done = 0; done < length && rc == 0; done += chunk) {
		chunk = min_u64(chunk, length - done);
		if (lbdata || pbdata) {
			for (b = 0; b < chunk; b += blocksize)
				stamp_lba(stage + b, (cmd->offset + done + b) >> lu->blk_shift,
					  lbdata, pbdata);
		}
		rc = dedupv1_write(d->vol, cmd->offset + done, chunk, stage, fua,
				   err, sizeof(err));
	}
	pthread_rwlock_unlock(&d->ordering);
	if (rc)
		set_engine_error(cmd, rc, IO_WRITE, "write same",
				 cmd->offset + done - chunk, chunk, err);
	free(stage);
}

/* UNMAP: every block descriptor is checked before any range is deallocated,
 * so a bad descriptor fails the command without a partial unmap. */
static void do_unmap(struct scsi_cmd *cmd, struct dedupv1_lu *d)
{
	struct scsi_lu *lu = cmd->dev;
	uint64_t capacity = lu_size(lu) >> lu->blk_shift;
	uint64_t out_length = scsi_get_out_length(cmd);
	const uint8_t *param = scsi_get_out_buffer(cmd);
	char err[DEDUPV1_ERRLEN] = "";
	uint64_t descriptors, i, lba, count;
	int rc;

	if (out_length < 8)
		return; /* no block descriptors: GOOD, as tgt's rdwr answers */
	descriptors = min_u64(get_unaligned_be16(param + 2), out_length - 8) / 16;
	for (i = 0; i < descriptors; i++) {
		lba = get_unaligned_be64(param + 8 + 16 * i);
		count = get_unaligned_be32(param + 8 + 16 * i + 8);
		if (lba > capacity || count > capacity - lba) {
			eprintf("dedupv1: UNMAP of lba %" PRIu64 " +%" PRIu64
				" beyond the end (%" PRIu64 " blocks)\n",
				lba, count, capacity);
			set_sense(cmd, ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
			return;
		}
	}
	pthread_rwlock_rdlock(&d->ordering);
	for (i = 0; i < descriptors; i++) {
		lba = get_unaligned_be64(param + 8 + 16 * i);
		count = get_unaligned_be32(param + 8 + 16 * i + 8);
		if (!count)
			continue;
		rc = dedupv1_unmap(d->vol, lba << lu->blk_shift, count << lu->blk_shift,
				   err, sizeof(err));
		if (rc) {
			set_engine_error(cmd, rc, IO_WRITE, "unmap",
					 lba << lu->blk_shift, count << lu->blk_shift, err);
			break;
		}
	}
	pthread_rwlock_unlock(&d->ordering);
}

/* SYNCHRONIZE CACHE (10/16): the whole volume; IMMED may be honoured by
 * returning after the sync, which we do. */
static void do_sync(struct scsi_cmd *cmd, struct dedupv1_lu *d)
{
	char err[DEDUPV1_ERRLEN] = "";
	int rc = dedupv1_sync(d->vol, err, sizeof(err));

	if (rc)
		set_engine_error(cmd, rc, IO_WRITE, "synchronize cache", 0, 0, err);
}

/* State of the blocks from |offset| on: *mapped and the run length in blocks
 * (at least 1, at most the window). The engine's Volume::IsMapped answers for
 * the range's first byte and the run with that state; dedupv1_c.h documents
 * "1 if any byte is mapped". Both readings agree on 0 (nothing mapped) and on
 * a run covering the whole range; otherwise a second question about the run
 * alone gets the run's own state. A block only partly mapped counts as mapped. */
static int lba_run(struct scsi_cmd *cmd, struct dedupv1_lu *d, uint64_t offset,
		   int *mapped, uint64_t *blocks)
{
	struct scsi_lu *lu = cmd->dev;
	uint64_t blocksize = 1ULL << lu->blk_shift;
	uint64_t remaining = min_u64(lu_size(lu) - offset, DEDUPV1_LBA_STATUS_WINDOW);
	uint64_t run = 0, ignored;
	char err[DEDUPV1_ERRLEN] = "";
	int rc;

	rc = dedupv1_mapped(d->vol, offset, remaining, &run, err, sizeof(err));
	if (rc >= 0 && (run == 0 || run > remaining))
		run = blocksize; /* no usable run: look at one block */
	if (rc > 0 && run < remaining) /* "mapped" may be about a later run */
		rc = dedupv1_mapped(d->vol, offset, run, &ignored, err, sizeof(err));
	if (rc < 0) {
		set_engine_error(cmd, rc, IO_READ, "get lba status", offset,
				 remaining, err);
		return -1;
	}
	*mapped = rc > 0;
	*blocks = run >> lu->blk_shift;
	if (run & (blocksize - 1)) {
		if (*mapped) {
			(*blocks)++;
		} else if (*blocks == 0) {
			*mapped = 1;
			*blocks = 1;
		}
	}
	*blocks = min_u64(*blocks, remaining >> lu->blk_shift);
	return 0;
}

/* GET LBA STATUS, run on a worker: as many LBA status descriptors from the
 * starting LBA as fit the allocation length (at least one, so the PARAMETER
 * DATA LENGTH tells what a larger buffer would get). */
static void do_get_lba_status(struct scsi_cmd *cmd, struct dedupv1_lu *d)
{
	struct scsi_lu *lu = cmd->dev;
	uint64_t offset = get_unaligned_be64(&cmd->scb[2]) << lu->blk_shift;
	const uint64_t start = offset;
	uint32_t alloc_len = get_unaligned_be32(&cmd->scb[10]);
	uint32_t room = min_u64(alloc_len, scsi_get_in_length(cmd));
	uint64_t max_desc = room >= 24 ? (room - 8) / 16 : 1;
	uint64_t n = 0, blocks, lba;
	uint32_t total;
	uint8_t *param;
	int mapped;

	param = alloc_or_sense(cmd, 8 + 16 * max_desc);
	if (!param) {
		scsi_set_in_resid_by_actual(cmd, 0);
		return;
	}
	memset(param, 0, 8 + 16 * max_desc);
	while (n < max_desc && offset < lu_size(lu) &&
	       offset - start < DEDUPV1_LBA_STATUS_BUDGET) {
		if (lba_run(cmd, d, offset, &mapped, &blocks) < 0) {
			scsi_set_in_resid_by_actual(cmd, 0);
			free(param);
			return;
		}
		lba = offset >> lu->blk_shift;
		blocks = min_u64(blocks, 0xffffffffULL);
		/* Merge with the previous descriptor when the state is the same. */
		if (n > 0 && param[8 + 16 * (n - 1) + 12] == (mapped ? 0 : 1) &&
		    get_unaligned_be32(param + 8 + 16 * (n - 1) + 8) + blocks <= 0xffffffffULL) {
			put_unaligned_be32(get_unaligned_be32(param + 8 + 16 * (n - 1) + 8) + blocks,
					   param + 8 + 16 * (n - 1) + 8);
		} else {
			put_unaligned_be64(lba, param + 8 + 16 * n);
			put_unaligned_be32(blocks, param + 8 + 16 * n + 8);
			param[8 + 16 * n + 12] = mapped ? 0 : 1; /* 0 mapped, 1 deallocated */
			n++;
		}
		offset += blocks << lu->blk_shift;
	}
	total = 8 + 16 * n;
	put_unaligned_be32(total - 4, param); /* PARAMETER DATA LENGTH */
	memcpy(scsi_get_in_buffer(cmd), param, min_u64(total, room));
	scsi_set_in_resid_by_actual(cmd, min_u64(total, room));
	free(param);
}

/* SERVICE ACTION IN (16) / GET LBA STATUS, on tgtd's main thread: the checks
 * tgt's own handler makes, then the work goes to the LU's workers. */
static int dedupv1_get_lba_status(int host_no, struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->dev;
	uint64_t lba = get_unaligned_be64(&cmd->scb[2]);

	if (lu->attrs.removable && !lu->attrs.online) {
		sense_data_build(cmd, NOT_READY, ASC_MEDIUM_NOT_PRESENT);
		return SAM_STAT_CHECK_CONDITION;
	}
	if (lba >= (lu_size(lu) >> lu->blk_shift)) {
		sense_data_build(cmd, ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return SAM_STAT_CHECK_CONDITION;
	}
	if (get_unaligned_be32(&cmd->scb[10]) == 0) {
		scsi_set_in_resid_by_actual(cmd, 0);
		return SAM_STAT_GOOD;
	}
	if (lu->bst->bs_cmd_submit(cmd)) {
		sense_data_build(cmd, HARDWARE_ERROR, ASC_INTERNAL_TGT_FAILURE);
		return SAM_STAT_CHECK_CONDITION;
	}
	return SAM_STAT_GOOD;
}

static void dedupv1_dispatch(struct scsi_cmd *cmd, struct dedupv1_lu *d)
{
	switch (cmd->scb[0]) {
	case READ_6:
	case READ_10:
	case READ_12:
	case READ_16:
		do_read(cmd, d);
		break;
	case WRITE_6:
	case WRITE_10:
	case WRITE_12:
	case WRITE_16:
		do_write(cmd, d, 0);
		break;
	case WRITE_VERIFY:
	case WRITE_VERIFY_12:
	case WRITE_VERIFY_16:
		do_write(cmd, d, 1);
		break;
	case VERIFY_10:
	case VERIFY_12:
	case VERIFY_16:
		do_verify(cmd, d);
		break;
	case COMPARE_AND_WRITE:
		do_compare_and_write(cmd, d);
		break;
	case ORWRITE_16:
		do_orwrite(cmd, d);
		break;
	case WRITE_SAME:
	case WRITE_SAME_16:
		do_write_same(cmd, d);
		break;
	case UNMAP:
		do_unmap(cmd, d);
		break;
	case SYNCHRONIZE_CACHE:
	case SYNCHRONIZE_CACHE_16:
		do_sync(cmd, d);
		break;
	case PRE_FETCH_10:
	case PRE_FETCH_16:
		break; /* nothing to stage: GOOD, as tgt's rdwr answers */
	case SERVICE_ACTION_IN:
		if ((cmd->scb[1] & 0x1f) == SAI_GET_LBA_STATUS)
			do_get_lba_status(cmd, d);
		else
			set_sense(cmd, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
		break;
	default:
		set_sense(cmd, ILLEGAL_REQUEST, ASC_INVALID_OP_CODE);
		break;
	}
}

static uint64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A command served slower than this is logged: initiators give up on a
 * command after 30 s by default (Linux sd) and start aborts and resets, so
 * an admin (and a test's log) must see which command was that slow. */
#define DEDUPV1_SLOW_CMD_MS 5000

static void dedupv1_request(struct scsi_cmd *cmd)
{
	struct dedupv1_lu *d = DEDUPV1_LU(cmd->dev);
	uint64_t t0 = monotonic_ms(), took;

	scsi_set_result(cmd, SAM_STAT_GOOD); /* overwritten on error */
	dedupv1_dispatch(cmd, d);
	took = monotonic_ms() - t0;
	if (took >= DEDUPV1_SLOW_CMD_MS)
		eprintf("dedupv1: lun %" PRIu64 " (volume '%s'): opcode 0x%02x at byte %" PRIu64
			" (%" PRIu64 " bytes) took %" PRIu64 ".%01" PRIu64 " s\n",
			cmd->dev->lun, d->volume, cmd->scb[0], cmd->offset, (uint64_t)cmd->tl,
			took / 1000, took % 1000 / 100);
}

/* tgtd's event loop (its main thread) answers every initiator's pings and
 * moves every command's data; when it does not run, initiators drop their
 * connections after about 10 s and, past their replacement timeout, fail
 * I/O. A tick on the loop (tgt's work timer, due every second, run within
 * about 1.5 s) records when the loop last ran; a watcher thread logs a loop
 * that has not run for 5 s while tgtd runs, and the tick logs the length of
 * any gap of 5 s or more once the loop runs again (also after the whole
 * process or machine stood still). Both measure from the last tick, so a
 * stall is reported up to about 1.5 s longer than it was. The loop is also
 * held by the module's own work on the main thread: the first LU opening
 * the engine and the last one closing it (a flush) are logged as stalls when
 * they take that long, which is what initiators saw. Started by the first
 * LU, on the main thread (the work list is the loop's own); runs as long as
 * tgtd. */
#define DEDUPV1_LOOP_STALL_MS 5000

static struct tgt_work loop_tick_work;
static uint64_t loop_last_tick_ms; /* atomic */
static int loop_watch_started;     /* main thread only */

static void loop_tick(void *data)
{
	uint64_t now = monotonic_ms();
	uint64_t last = __atomic_load_n(&loop_last_tick_ms, __ATOMIC_ACQUIRE);

	(void)data;
	/* The timer is due every second; a gap well beyond it is a stall. */
	if (last && now - last >= DEDUPV1_LOOP_STALL_MS)
		eprintf("dedupv1: tgtd's event loop ran again after %" PRIu64 ".%01" PRIu64
			" s without a turn: initiators' pings and commands waited that long\n",
			(now - last) / 1000, (now - last) % 1000 / 100);
	__atomic_store_n(&loop_last_tick_ms, now, __ATOMIC_RELEASE);
	add_work(&loop_tick_work, 1);
}

static void *loop_watch(void *arg)
{
	uint64_t reported = 0; /* the tick whose stall was logged */
	sigset_t all;

	(void)arg;
	/* tgtd's main thread takes its signals (signalfd), as for tgt's own
	 * worker threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		uint64_t last, now;

		sleep(1);
		last = __atomic_load_n(&loop_last_tick_ms, __ATOMIC_ACQUIRE);
		now = monotonic_ms();
		if (now - last >= DEDUPV1_LOOP_STALL_MS && last != reported) {
			eprintf("dedupv1: tgtd's event loop has not run for %" PRIu64
				" s: initiators get no answers (they drop the connection after about 10 s)\n",
				(now - last) / 1000);
			reported = last;
		}
	}
	return NULL;
}

static void start_loop_watch(void)
{
	pthread_t thread;
	pthread_attr_t attr;

	if (loop_watch_started)
		return;
	loop_watch_started = 1;
	__atomic_store_n(&loop_last_tick_ms, monotonic_ms(), __ATOMIC_RELEASE);
	loop_tick_work.func = loop_tick;
	loop_tick_work.data = NULL;
	add_work(&loop_tick_work, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&thread, &attr, loop_watch, NULL))
		eprintf("dedupv1: no watcher of tgtd's event loop (pthread_create failed); stalls are logged when they end\n");
	pthread_attr_destroy(&attr);
}

/* Parses bsopts "volume=NAME[;datadir=DIR]" (';' separates: tgtd splits the
 * whole LU parameter string at ','). Logs and returns -1 on anything else. */
static int parse_bsopts(const char *bsopts, struct dedupv1_lu *d)
{
	char *copy, *item, *save = NULL;
	int have_volume = 0, ret = -1;

	if (!bsopts || !*bsopts) {
		eprintf("dedupv1: --bsopts \"volume=NAME\" is required\n");
		return -1;
	}
	copy = strdup(bsopts);
	if (!copy)
		return -1;
	for (item = strtok_r(copy, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
		char *key = item, *value, *end;

		while (*key == ' ' || *key == '\t')
			key++;
		end = key + strlen(key);
		while (end > key && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (!*key)
			continue;
		value = strchr(key, '=');
		if (!value || value == key || !value[1]) {
			eprintf("dedupv1: bsopts item '%s' is not key=value "
				"(expected volume=NAME[;datadir=DIR])\n", key);
			goto out;
		}
		*value++ = '\0';
		if (!strcmp(key, "volume")) {
			if (have_volume) {
				eprintf("dedupv1: bsopts names the volume twice\n");
				goto out;
			}
			if (strlen(value) > DEDUPV1_MAX_VOLUME_NAME) {
				eprintf("dedupv1: volume name longer than %d bytes\n",
					DEDUPV1_MAX_VOLUME_NAME);
				goto out;
			}
			strcpy(d->volume, value);
			have_volume = 1;
		} else if (!strcmp(key, "datadir")) {
			if (d->data_dir) {
				eprintf("dedupv1: bsopts names the datadir twice\n");
				goto out;
			}
			if (value[0] != '/') {
				eprintf("dedupv1: datadir '%s' must be an absolute path\n",
					value);
				goto out;
			}
			d->data_dir = strdup(value);
			if (!d->data_dir)
				goto out;
		} else {
			eprintf("dedupv1: unknown bsopts key '%s' (known: volume, datadir)\n",
				key);
			goto out;
		}
	}
	if (!have_volume) {
		eprintf("dedupv1: bsopts '%s' does not name a volume (volume=NAME)\n",
			bsopts);
		goto out;
	}
	ret = 0;
out:
	free(copy);
	if (ret) {
		free(d->data_dir);
		d->data_dir = NULL;
	}
	return ret;
}

/* UNMAP, on tgtd's main thread: the checks of tgt's sbc_unmap, then the work
 * goes to the LU's workers. Ours because tgt 1.0.85's sbc_unmap, after handing
 * the command to the backing store, goes on to write ILLEGAL REQUEST / LOGICAL
 * UNIT NOT SUPPORTED into its sense buffer, racing with the worker (an error
 * sense of ours could be replaced by that one). */
static int dedupv1_unmap_front(int host_no, struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->dev;
	uint8_t key;
	uint16_t asc;

	if (device_reserved(cmd))
		return SAM_STAT_RESERVATION_CONFLICT;
	if (cmd->scb[1] & 0x01) { /* ANCHOR: no anchored blocks */
		key = ILLEGAL_REQUEST;
		asc = ASC_INVALID_FIELD_IN_CDB;
	} else if (lu->attrs.removable && !lu->attrs.online) {
		key = NOT_READY;
		asc = ASC_MEDIUM_NOT_PRESENT;
	} else if (!lu->attrs.thinprovisioning) {
		key = ILLEGAL_REQUEST;
		asc = ASC_INVALID_OP_CODE;
	} else if (lu->attrs.readonly || lu->attrs.swp) {
		key = DATA_PROTECT;
		asc = ASC_WRITE_PROTECT;
	} else if (lu->bst->bs_cmd_submit(cmd)) {
		key = HARDWARE_ERROR;
		asc = ASC_INTERNAL_TGT_FAILURE;
	} else {
		return SAM_STAT_GOOD;
	}
	cmd->offset = 0;
	scsi_set_in_resid_by_actual(cmd, 0);
	scsi_set_out_resid_by_actual(cmd, 0);
	sense_data_build(cmd, key, asc);
	return SAM_STAT_CHECK_CONDITION;
}

/* tgt 1.0.85's sbc table leaves COMPARE AND WRITE out (the entry is commented
 * out) although its sbc_rw checks it completely (LBA range, protection, write
 * protect) and its Block Limits VPD announces a maximum length: this LU's copy
 * routes it through the handler of WRITE (16), which is sbc_rw. UNMAP goes to
 * dedupv1_unmap_front. */
static void take_over_ops(struct scsi_lu *lu)
{
	struct device_type_operations *ops = lu->dev_type_template.ops;

	ops[COMPARE_AND_WRITE].cmd_perform = ops[WRITE_16].cmd_perform;
	ops[COMPARE_AND_WRITE].pr_conflict_bits = ops[WRITE_16].pr_conflict_bits;
	ops[UNMAP].cmd_perform = dedupv1_unmap_front;
}

/* Points this LU's SERVICE ACTION IN (16) table at a copy of tgt's in which
 * GET LBA STATUS is ours (READ CAPACITY (16) stays tgt's). */
static void take_over_get_lba_status(struct scsi_lu *lu, struct dedupv1_lu *d)
{
	struct device_type_operations *op = &lu->dev_type_template.ops[SERVICE_ACTION_IN];
	struct service_action *sa = op->service_actions;
	int n = 0, replaced = 0;

	for (; sa && sa->cmd_perform; sa++) {
		if (n == DEDUPV1_MAX_SERVICE_ACTIONS) {
			eprintf("dedupv1: unexpected SERVICE ACTION IN table, "
				"GET LBA STATUS stays tgt's\n");
			return;
		}
		d->service_actions[n] = *sa;
		if (sa->service_action == SAI_GET_LBA_STATUS) {
			d->service_actions[n].cmd_perform = dedupv1_get_lba_status;
			replaced = 1;
		}
		n++;
	}
	if (!replaced) {
		if (n == DEDUPV1_MAX_SERVICE_ACTIONS)
			return;
		d->service_actions[n].service_action = SAI_GET_LBA_STATUS;
		d->service_actions[n].cmd_perform = dedupv1_get_lba_status;
		n++;
	}
	memset(&d->service_actions[n], 0, sizeof(d->service_actions[n]));
	op->service_actions = d->service_actions;
}

/* Block Limits VPD page (B0h): tgt's contents, then our MAXIMUM UNMAP BLOCK
 * DESCRIPTOR COUNT when UNMAP is announced (tgt keeps the page without its
 * 4-byte header: data + 20 is the page's byte 24). Ours is the page's updater,
 * not a one-time patch, because tgt runs the updater again whenever tgtadm
 * sets thin_provisioning. */
static void dedupv1_update_block_limits(struct scsi_lu *lu, void *data)
{
	struct dedupv1_lu *d = DEDUPV1_LU(lu);
	struct vpd *page = lu->attrs.lu_vpd[PCODE_OFFSET(0xb0)];

	d->tgt_update_block_limits(lu, data);
	if (lu->attrs.thinprovisioning && page->size >= 24)
		put_unaligned_be32(DEDUPV1_MAX_UNMAP_DESCRIPTORS, page->data + 20);
}

static void take_over_block_limits(struct scsi_lu *lu, struct dedupv1_lu *d)
{
	struct vpd *page = lu->attrs.lu_vpd[PCODE_OFFSET(0xb0)];

	if (!page || !page->vpd_update ||
	    page->vpd_update == dedupv1_update_block_limits)
		return;
	d->tgt_update_block_limits = page->vpd_update;
	page->vpd_update = dedupv1_update_block_limits;
}

/* The LU's volume grows to its size in the config (dedupv1d volume grow
 * edits the config, then asks for this): the engine grows the volume (its
 * table first), then the LU's capacity follows and every I_T nexus of the LU
 * gets the unit attention CAPACITY DATA HAS CHANGED, so initiators rescan.
 * Runs on tgtd's main thread, which checks CDBs against lu->size; our
 * worker threads read it too (lu_size), and it only grows, after the engine
 * grew, so a worker sees the old or the new size and both are served. A
 * shrink or a config that does not load changes nothing. */
static tgtadm_err dedupv1_resize(struct scsi_lu *lu)
{
	struct dedupv1_lu *d = DEDUPV1_LU(lu);
	uint64_t blocksize = 1ULL << lu->blk_shift;
	char err[DEDUPV1_ERRLEN] = "";
	uint64_t size = 0;
	int rc;

	if (!d->vol) {
		eprintf("dedupv1: lun %" PRIu64 ": no open volume to resize\n", lu->lun);
		return TGTADM_INVALID_REQUEST;
	}
	rc = dedupv1_tgt_resize(d->vol, blocksize, &size, err, sizeof(err));
	if (rc) {
		eprintf("dedupv1: lun %" PRIu64 " (volume '%s') not resized: %s: %s\n",
			lu->lun, d->volume, engine_code_name(rc), err);
		return TGTADM_INVALID_REQUEST;
	}
	if (size % blocksize) {
		eprintf("dedupv1: lun %" PRIu64 " (volume '%s') not resized: %" PRIu64
			" bytes is not a multiple of the %" PRIu64 "-byte block size\n",
			lu->lun, d->volume, size, blocksize);
		return TGTADM_INVALID_REQUEST;
	}
	if (size == lu->size)
		return TGTADM_SUCCESS;
	eprintf("dedupv1: lun %" PRIu64 " (volume '%s') grows from %" PRIu64 " to %" PRIu64 " bytes\n",
		lu->lun, d->volume, lu->size, size);
	__atomic_store_n(&lu->size, size, __ATOMIC_RELEASE);
	/* itn_id 0 is no nexus: iSCSI sessions are numbered by TSIH, never 0. */
	ua_sense_add_other_it_nexus(0, lu, DEDUPV1_ASC_CAPACITY_DATA_CHANGED);
	return TGTADM_SUCCESS;
}

/* What tgtadm's |params| ("targetOps ITEM,ITEM,...," as tgtadm sends
 * --params) ask of us: our one item alone (RESIZE, DROP with the volume name
 * copied to |name|, or INDEX_GROW with its byte count copied there), tgt's
 * own items (NONE), or ours mixed with others (MIXED: refused, they do not
 * combine). */
enum lu_request { LU_REQ_NONE, LU_REQ_RESIZE, LU_REQ_DROP, LU_REQ_INDEX_GROW, LU_REQ_MIXED };

static enum lu_request lu_request_of(const char *params, char *name, size_t namelen)
{
	char copy[1024], *rest = copy, *item;
	int ours = 0, others = 0;
	enum lu_request req = LU_REQ_NONE;
	size_t drop_len = strlen(DEDUPV1_DROP_PARAM);
	size_t grow_len = strlen(DEDUPV1_INDEX_GROW_PARAM);

	if (!params || !strstr(params, "dedupv1_"))
		return LU_REQ_NONE;
	if (!strncmp(params, "targetOps ", 10))
		params += 10;
	snprintf(copy, sizeof(copy), "%s", params);
	while ((item = strsep(&rest, ",")) != NULL) {
		if (!*item)
			continue;
		if (!strcmp(item, DEDUPV1_RESIZE_PARAMS)) {
			req = LU_REQ_RESIZE;
			ours++;
		} else if (!strncmp(item, DEDUPV1_DROP_PARAM, drop_len) && item[drop_len]) {
			if (strlen(item + drop_len) >= namelen)
				return LU_REQ_MIXED; /* no volume has such a long name */
			snprintf(name, namelen, "%s", item + drop_len);
			req = LU_REQ_DROP;
			ours++;
		} else if (!strncmp(item, DEDUPV1_INDEX_GROW_PARAM, grow_len) && item[grow_len]) {
			if (strlen(item + grow_len) >= namelen ||
			    strspn(item + grow_len, "0123456789") != strlen(item + grow_len))
				return LU_REQ_MIXED; /* not a byte count */
			snprintf(name, namelen, "%s", item + grow_len);
			req = LU_REQ_INDEX_GROW;
			ours++;
		} else {
			others++;
		}
	}
	if (!ours)
		return LU_REQ_NONE;
	return ours == 1 && others == 0 ? req : LU_REQ_MIXED;
}

static tgtadm_err dedupv1_lu_config(struct scsi_lu *lu, char *params)
{
	struct dedupv1_lu *d = DEDUPV1_LU(lu);
	char name[DEDUPV1_MAX_VOLUME_NAME + 1] = "";
	char err[DEDUPV1_ERRLEN] = "";
	int rc;

	switch (lu_request_of(params, name, sizeof(name))) {
	case LU_REQ_RESIZE:
		return dedupv1_resize(lu);
	case LU_REQ_DROP:
		/* Runs in the background: "still active" until it is done
		 * (dedupv1d asks again until then). */
		rc = dedupv1_tgt_drop_volume(name, err, sizeof(err));
		if (rc == DEDUPV1_EBUSY)
			return TGTADM_LUN_ACTIVE;
		if (rc) {
			eprintf("dedupv1: volume '%s' not dropped: %s: %s\n", name, engine_code_name(rc), err);
			return TGTADM_INVALID_REQUEST;
		}
		return TGTADM_SUCCESS;
	case LU_REQ_INDEX_GROW:
		rc = dedupv1_tgt_grow_index(strtoull(name, NULL, 10), err, sizeof(err));
		if (rc) {
			eprintf("dedupv1: chunk index growth not begun: %s: %s\n", engine_code_name(rc), err);
			return TGTADM_INVALID_REQUEST;
		}
		return TGTADM_SUCCESS;
	case LU_REQ_MIXED:
		eprintf("dedupv1: lun %" PRIu64 ": dedupv1_* items go alone in --params (and name a volume "
			"or a byte count), not with other items\n",
			lu->lun);
		return TGTADM_INVALID_REQUEST;
	case LU_REQ_NONE:
		break;
	}
	return d->tgt_lu_config ? d->tgt_lu_config(lu, params) : TGTADM_INVALID_REQUEST;
}

static void take_over_lu_config(struct scsi_lu *lu, struct dedupv1_lu *d)
{
	d->tgt_lu_config = lu->dev_type_template.lu_config;
	lu->dev_type_template.lu_config = dedupv1_lu_config;
}

static tgtadm_err dedupv1_init(struct scsi_lu *lu, char *bsopts)
{
	struct dedupv1_lu *d = DEDUPV1_LU(lu);
	tgtadm_err ret;

	if (lu->dev_type_template.type != TYPE_DISK) {
		eprintf("dedupv1: bstype dedupv1 serves disks only (--device-type disk)\n");
		return TGTADM_INVALID_REQUEST;
	}
	if (parse_bsopts(bsopts, d))
		return TGTADM_INVALID_REQUEST;
	if (pthread_rwlock_init(&d->ordering, NULL)) {
		free(d->data_dir);
		d->data_dir = NULL;
		return TGTADM_NOMEM;
	}
	ret = bs_thread_open(&d->threads, dedupv1_request,
			     &nr_iothreads ? nr_iothreads : DEDUPV1_DEFAULT_IOTHREADS);
	if (ret != TGTADM_SUCCESS) {
		/* tgt frees the LU without bs_exit when bs_init fails. */
		pthread_rwlock_destroy(&d->ordering);
		free(d->data_dir);
		d->data_dir = NULL;
		return ret;
	}
	take_over_get_lba_status(lu, d);
	take_over_ops(lu);
	take_over_block_limits(lu, d);
	take_over_lu_config(lu, d);
	return TGTADM_SUCCESS;
}

static void dedupv1_exit(struct scsi_lu *lu)
{
	struct dedupv1_lu *d = DEDUPV1_LU(lu);

	bs_thread_close(&d->threads);
	pthread_rwlock_destroy(&d->ordering);
	free(d->data_dir);
	d->data_dir = NULL;
}

/* The LU's SCSI identity from the volume's uid (the volume table's random
 * 128-bit id), so it is unique per volume and instance and stays with the
 * volume whatever its LUN number: VPD 0x80 serial = the uid's 32 hex digits;
 * VPD 0x83 (tgt builds it from scsi_id and numeric_id) = T10 vendor id
 * "DEDUPV1 " + the last 28 digits, NAA IEEE Registered Extended from those
 * digits, NAA locally assigned from the uid's first 8 bytes. tgt's defaults
 * (tid and LUN number) are the same for LUN 1 of every tgtd. An admin's later
 * `tgtadm --op update --params scsi_sn=...,scsi_id=...` still wins. */
static void set_scsi_identity(struct scsi_lu *lu, dedupv1_volume *vol)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t uid[16];
	char digits[33];
	int i;

	dedupv1_volume_uid(vol, uid);
	for (i = 0; i < 16; i++) {
		digits[2 * i] = hex[uid[i] >> 4];
		digits[2 * i + 1] = hex[uid[i] & 15];
	}
	digits[32] = '\0';
	snprintf(lu->attrs.scsi_sn, sizeof(lu->attrs.scsi_sn), "%s", digits);
	snprintf(lu->attrs.scsi_id, sizeof(lu->attrs.scsi_id), "DEDUPV1 %s", digits + 4);
	lu->attrs.numeric_id = get_unaligned_be64(uid);
	if (lu->attrs.lu_vpd[PCODE_OFFSET(0x80)])
		lu->attrs.lu_vpd[PCODE_OFFSET(0x80)]->vpd_update(lu, lu->attrs.scsi_sn);
	if (lu->attrs.lu_vpd[PCODE_OFFSET(0x83)])
		lu->attrs.lu_vpd[PCODE_OFFSET(0x83)]->vpd_update(lu, lu->attrs.scsi_id);
}

/* |path| is the engine's config file; the volume comes from bsopts. */
static int dedupv1_open_lu(struct scsi_lu *lu, char *path, int *fd, uint64_t *size)
{
	struct dedupv1_lu *d = DEDUPV1_LU(lu);
	uint64_t blocksize = 1ULL << lu->blk_shift;
	char err[DEDUPV1_ERRLEN] = "";
	dedupv1_volume *vol;
	uint64_t volume_size;
	int rc;

	rc = dedupv1_tgt_acquire(path, d->data_dir, d->volume, &vol, err, sizeof(err));
	if (rc) {
		eprintf("dedupv1: cannot open volume '%s' with config '%s'%s%s: %s: %s\n",
			d->volume, path, d->data_dir ? " datadir " : "",
			d->data_dir ? d->data_dir : "", engine_code_name(rc), err);
		return -1;
	}
	volume_size = dedupv1_volume_size(vol);
	if (volume_size < blocksize || volume_size % blocksize) {
		eprintf("dedupv1: volume '%s' has %" PRIu64 " bytes, not a positive "
			"multiple of the %" PRIu64 "-byte block size\n",
			d->volume, volume_size, blocksize);
		dedupv1_tgt_release(vol, err, sizeof(err));
		return -1;
	}
	d->vol = vol;
	*fd = -1; /* no file descriptor: tgt must not touch one */
	*size = volume_size;

	/* Thin provisioned: READ CAPACITY (16) LBPME+LBPRZ, Logical Block
	 * Provisioning VPD (LBPU, LBPWS, LBPWS10, LBPRZ), unmap limits in the
	 * Block Limits VPD (see dedupv1_update_block_limits). sbc refuses UNMAP
	 * and WRITE SAME with UNMAP without it. */
	lu->attrs.thinprovisioning = 1;
	if (lu->attrs.lu_vpd[PCODE_OFFSET(0xb0)])
		lu->attrs.lu_vpd[PCODE_OFFSET(0xb0)]->vpd_update(lu, NULL);
	if (lu->attrs.lu_vpd[PCODE_OFFSET(0xb2)])
		lu->attrs.lu_vpd[PCODE_OFFSET(0xb2)]->vpd_update(lu, NULL);
	if (!lu->attrs.no_auto_lbppbe)
		update_lbppbe(lu, DEDUPV1_PHYSICAL_BLOCK);
	set_scsi_identity(lu, vol);
	start_loop_watch();

	eprintf("dedupv1: lun %" PRIu64 " serves volume '%s' (id %" PRIu32 ", %" PRIu64
		" bytes, serial %s) from '%s'\n", lu->lun, d->volume,
		dedupv1_volume_id(vol), volume_size, lu->attrs.scsi_sn, path);
	return 0;
}

static void dedupv1_close_lu(struct scsi_lu *lu)
{
	struct dedupv1_lu *d = DEDUPV1_LU(lu);
	char err[DEDUPV1_ERRLEN] = "";
	int rc;

	if (!d->vol)
		return;
	rc = dedupv1_tgt_release(d->vol, err, sizeof(err));
	d->vol = NULL;
	if (rc)
		eprintf("dedupv1: closing the engine after volume '%s' failed: %s: %s\n",
			d->volume, engine_code_name(rc), err);
}

static struct backingstore_template dedupv1_bst = {
	.bs_name		= DEDUPV1_BS_NAME,
	.bs_datasize		= sizeof(struct dedupv1_lu),
	.bs_open		= dedupv1_open_lu,
	.bs_close		= dedupv1_close_lu,
	.bs_init		= dedupv1_init,
	.bs_exit		= dedupv1_exit,
	.bs_cmd_submit		= bs_thread_cmd_submit,
	.bs_oflags_supported	= O_SYNC,
};

/* Registers the template unless a dedupv1 template is already there (the
 * LD_PRELOADed copy and the installed copy may both be loaded). */
static void dedupv1_register(void)
{
	static unsigned char opcodes[] = {
		ALLOW_MEDIUM_REMOVAL, COMPARE_AND_WRITE, FORMAT_UNIT, INQUIRY,
		MAINT_PROTOCOL_IN, MODE_SELECT, MODE_SELECT_10, MODE_SENSE,
		MODE_SENSE_10, ORWRITE_16, PERSISTENT_RESERVE_IN,
		PERSISTENT_RESERVE_OUT, PRE_FETCH_10, PRE_FETCH_16, READ_6,
		READ_10, READ_12, READ_16, READ_CAPACITY, RELEASE, REPORT_LUNS,
		REQUEST_SENSE, RESERVE, SEND_DIAGNOSTIC, SERVICE_ACTION_IN,
		START_STOP, SYNCHRONIZE_CACHE, SYNCHRONIZE_CACHE_16,
		TEST_UNIT_READY, UNMAP, VERIFY_10, VERIFY_12, VERIFY_16, WRITE_6,
		WRITE_10, WRITE_12, WRITE_16, WRITE_SAME, WRITE_SAME_16,
		WRITE_VERIFY, WRITE_VERIFY_12, WRITE_VERIFY_16,
	};

	if (get_backingstore_template(DEDUPV1_BS_NAME))
		return;
	bs_create_opcode_map(&dedupv1_bst, opcodes, ARRAY_SIZE(opcodes));
	register_backingstore_template(&dedupv1_bst);
}

/* Called by tgtd after dlopen() of /usr/lib/tgt/backing-store/bs_dedupv1.so. */
__attribute__((visibility("default"))) void register_bs_module(void)
{
	dedupv1_register();
}

/* LD_PRELOAD into tgtd (tests): register before tgtd scans its module dir.
 * Outside tgtd (the symbols are missing) do nothing. */
__attribute__((constructor)) static void dedupv1_preload_register(void)
{
	if (dlsym(RTLD_DEFAULT, "register_backingstore_template") &&
	    dlsym(RTLD_DEFAULT, "get_backingstore_template"))
		dedupv1_register();
}
