// RadosEnv: the Env (core/base/env.h) of a store whose config says
// storage.backend = rados. Every file under the store's data directory
// (|root|, as the config names it; it need not exist locally) is a set of
// objects of the index pool, in the store's namespace, named by the path
// relative to |root|, so the engine's modules (LevelDB block index through
// its Env adapter, operations log, chunk index table, container catalog, the
// small metadata files) run on RADOS unchanged. A path outside |root| is
// InvalidArgument.
//
// Files: see core/rados/rados_file.h (striped over objects of
// RadosOptions::stripe_size, asynchronous writes, Sync waits for them).
//
// Directories: the directory <rel> is the object "<rel>/" (the root: "/"),
// whose omap keys are the names of its entries; GetChildren reads that omap
// (never a listing of the pool). Invariant: a listed name exists. So a file
// is created before its entry is added (every open for writing adds it, which
// also repairs a crash between the two), and its entry is removed before its
// objects. A crash in between leaves an unlisted file: invisible to listings,
// found by its name.
//
// Durability: librados acknowledges an operation once it is committed on
// every replica, so what returned OK is durable; SyncDir has nothing to do.
//
// Rename: RADOS has no rename. The target's stripes >= 1 are written under a
// fresh incarnation id, then one write of the target's stripe 0 (data, size,
// id) switches the target atomically: afterwards it holds the old or the new
// content, whole (what WriteFileAtomically needs), for a file of any size.
// Then the source's objects are removed.
// LinkFile copies (RADOS has no hard links): the two names are independent
// files afterwards. The engine only links files that never change again.
//
// Open handles: all handles of one file in this process share one state
// (size, pending writes). Deleting or renaming a file with open handles
// detaches them (their later calls fail NotFound) instead of keeping the old
// file alive as posix does; the engine closes files before it does either.
//
// GetFreeSpace: the index pool's MAX AVAIL of `ceph df detail` (what one more byte
// of the pool may use, after replication), or the quota left if the pool has
// a smaller max_bytes quota.
//
// LockFile: a lease on the lock file's object (core/rados/rados_lock.h).
#pragma once

#include <memory>
#include <string>

#include "core/base/env.h"
#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

Status NewRadosEnv(std::shared_ptr<RadosCluster> cluster, const std::string& root, std::unique_ptr<Env>* out);
// The same with every object named under |object_dir| (one name without '/',
// a gateway slot's "gw.NAME", RadosOptions::GatewayDir): the file <rel> is
// the object "gw.NAME/<rel>", the directory <rel> "gw.NAME/<rel>/", the root
// "gw.NAME/", the lock file's lease is on "gw.NAME/LOCK". "" = the layout
// above. Several slots thus share one namespace without sharing a file.
Status NewRadosEnv(std::shared_ptr<RadosCluster> cluster, const std::string& root, const std::string& object_dir,
                   std::unique_ptr<Env>* out);

// The object names a RadosEnv with |object_dir| gives, for code that must
// name its objects without opening one (a takeover's fence touches every
// object of a slot, core/engine/slot_takeover.cc): the file at |rel|, a path
// relative to the store's directory ("LOCK", "containers/catalog"; "" is
// the directory itself), is the object RadosEnvFileObject; the directory at
// |rel| the object RadosEnvDirObject ("" with object_dir "": "/"; with
// "gw.NAME": "gw.NAME/"). A striped file's further objects are named by
// RadosStripeOid (core/rados/rados_file.h).
std::string RadosEnvFileObject(const std::string& object_dir, const std::string& rel);
std::string RadosEnvDirObject(const std::string& object_dir, const std::string& rel);

}  // namespace dedupv1
