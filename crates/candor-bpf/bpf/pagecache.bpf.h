// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Part of candor.bpf.c (included there, in this order, after its shared definitions): Page cache insertions and writeback: which inode's pages whose writes dirtied. */

/* ---- page cache and writeback ---- */

/* These programs are raw tracepoints typed by the kernel's BTF (tp_btf), like the block
 * programs: they get the hook's arguments (a folio, a mapping, an inode) and read their
 * fields with plain loads. A classic tracepoint would first build its perf record (the
 * writeback ones copy the backing device's name into it) on every event of the machine,
 * tracked or not, and is skipped when another classic program runs on the CPU. */

/* The pages a folio holds: a large folio (PG_head in the first word of its flags) keeps
 * its order in the low byte of _flags_1. */
static __always_inline __u64 folio_pages(struct folio *folio)
{
	unsigned long f0 = *(unsigned long *)folio;
	if (!(f0 & (1UL << 6)))
		return 1;
	return 1ULL << (folio->_flags_1 & 15);
}

/* mm_filemap_add_to_page_cache(folio): a page read into (or created in) the page cache.
 * The file is the one the tracepoint's record names: its superblock's device (the inode's
 * own device number when it has no superblock) and its inode number. */
SEC("tp_btf/mm_filemap_add_to_page_cache")
int candor_cache_add(__u64 *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct folio *folio = (struct folio *)ctx[0];
	struct address_space *mapping = folio->mapping;
	if (!mapping)
		return 0;
	struct inode *host = mapping->host;
	if (!host)
		return 0;
	struct super_block *sb = host->i_sb;
	__u64 pages = folio_pages(folio);
	struct file_key k = { .dev = sb ? sb->s_dev : host->i_rdev, .ino = host->i_ino };
	struct file_stat *fs = bpf_map_lookup_elem(&files, &k);
	int count = is_tracked_tgid(tgid);
	if (fs) {
		__sync_fetch_and_add(&fs->misses, pages);
		count = 1;
	}
	if (count) {
		__u32 zero = 0;
		__u64 *m = bpf_map_lookup_elem(&cache_misses, &zero);
		if (m)
			*m += pages;
	}
	return 0;
}

/* The device a backing_dev_info's name gives ("7:2" -> major 7, minor 2, encoded as the
 * block programs' devices are), or 0 when the name is not "MAJ:MIN". */
static __always_inline __u32 bdi_dev(const char *from)
{
	char name[32] = {};
	/* Copied to the stack first, then parsed there. */
	if (bpf_probe_read_kernel(name, sizeof(name), from))
		return 0;
	__u32 major = 0, minor = 0, colon = 0, digits = 0;
	for (int i = 0; i < 32; i++) {
		char c = name[i];
		if (c == 0)
			break;
		if (c == ':' && !colon && digits) {
			colon = 1;
			digits = 0;
		} else if (c >= '0' && c <= '9') {
			if (colon)
				minor = minor * 10 + (c - '0');
			else
				major = major * 10 + (c - '0');
			digits++;
		} else {
			return 0;
		}
	}
	if (!colon || !digits)
		return 0;
	return (major << 20) | (minor & 0xfffff);
}

#define BDEVFS_MAGIC 0x62646576

/* The device an inode's writeback is named by: its backing device's name, as the kernel's
 * inode_to_bdi() finds it (a block device's inode: its disk's; any other: its superblock's),
 * or 0 when there is none or the name is not "MAJ:MIN". */
static __always_inline __u32 inode_bdi_dev(struct inode *in)
{
	if (!in)
		return 0;
	struct super_block *sb = in->i_sb;
	if (!sb)
		return 0;
	/* Read with helper calls: the block device path reaches the disk through memory the
	 * verifier cannot type, and both paths must end in one kind of pointer. */
	struct backing_dev_info *bdi = 0;
	void *named = 0;
	if (sb->s_magic == BDEVFS_MAGIC) {
		struct bdev_inode *bi = (struct bdev_inode *)((char *)in -
			__builtin_preserve_field_info(((struct bdev_inode *)0)->vfs_inode, 0));
		struct gendisk *disk = 0;
		if (bpf_probe_read_kernel(&disk, sizeof(disk), &bi->bdev.bd_disk) || !disk)
			return 0;
		bpf_probe_read_kernel(&bdi, sizeof(bdi), &disk->bdi);
	} else {
		bpf_probe_read_kernel(&bdi, sizeof(bdi), &sb->s_bdi);
	}
	if (!bdi || bpf_probe_read_kernel(&named, sizeof(named), &bdi->dev) || !named)
		return 0;
	return bdi_dev(bdi->dev_name);
}

/* writeback_dirty_folio(folio, mapping): the set's writes dirty an inode's pages. */
SEC("tp_btf/writeback_dirty_folio")
int candor_dirty_folio(__u64 *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u8 set = set_of(tgid);
	if (!set)
		return 0;
	struct address_space *mapping = (struct address_space *)ctx[1];
	if (!mapping)
		return 0;
	struct inode *in = mapping->host;
	if (!in)
		return 0;
	struct wb_key k = { .dev = inode_bdi_dev(in), .ino = in->i_ino };
	/* The set's own mark wins over the job's (a file both wrote: --shared-file). */
	__u8 *by = bpf_map_lookup_elem(&wb_inodes, &k);
	if (by && (*by == SET_OWN || *by == set))
		return 0;
	bpf_map_update_elem(&wb_inodes, &k, &set, BPF_ANY);
	return 0;
}

/* writeback_single_inode_start(inode, wbc, nr_to_write): this thread writes the inode back
 * until writeback_single_inode(inode, wbc, nr_to_write); the block programs ask whose
 * inode it is. */
SEC("tp_btf/writeback_single_inode_start")
int candor_wb_start(__u64 *ctx)
{
	struct inode *in = (struct inode *)ctx[0];
	if (!in)
		return 0;
	struct wb_key k = { .dev = inode_bdi_dev(in), .ino = in->i_ino };
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_update_elem(&wb_cur, &tid, &k, BPF_ANY);
	return 0;
}

SEC("tp_btf/writeback_single_inode")
int candor_wb_end(__u64 *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&wb_cur, &tid);
	return 0;
}
