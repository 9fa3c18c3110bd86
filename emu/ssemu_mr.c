/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory registration: a NIC's table of memory regions that peers' RMA
 * operations name by key.  The engine reads the table under the fabric
 * lock while it serves an operation at the target; registering and
 * deregistering take the same lock, so an entry never changes under an
 * operation that uses it.  An entry with a VNI (an auth key's) serves
 * operations on that VNI only (ssemu_auth_mr_refused).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ssemu_priv.h"

int ssemu_mr_reg(struct ssemu_nic *nic, const struct ssemu_mr_desc *mr)
{
	struct ssemu_region *r;
	struct ssemu_nic_sh *n;
	struct ssemu_mr_sh *t, *e;
	uint32_t i, hwm, slot = SSEMU_NONE;
	int ret;

	if (!nic || !mr || (mr->len && !mr->addr) ||
	    (mr->access & ~(SSEMU_MR_READ | SSEMU_MR_WRITE)) ||
	    (uintptr_t)mr->addr + mr->len < (uintptr_t)mr->addr ||
	    mr->base + mr->len < mr->base || mr->vni > SSEMU_VNI_MAX)
		return -EINVAL;
	ssemu_guard_arm();
	r = nic->fab->r;
	ret = ssemu_fab_check(nic->fab);
	if (ret)
		return ret;
	ret = ssemu_region_lock(r);
	if (ret)
		return ret;
	n = ssemu_r_nic(r, nic->slot);
	t = ssemu_r_mrs(r, nic->slot);
	hwm = SSEMU_MIN(n->mr_hwm, (uint32_t)SSEMU_MRS_PER_NIC);
	for (i = 0; i < hwm; i++) {
		if (!t[i].in_use) {
			if (slot == SSEMU_NONE)
				slot = i;
		} else if (t[i].key == mr->key) {
			ret = -EEXIST;
			goto out;
		}
	}
	if (slot == SSEMU_NONE) {
		if (hwm == SSEMU_MRS_PER_NIC) {
			ret = -ENOSPC;
			goto out;
		}
		slot = hwm;
		n->mr_hwm = hwm + 1;
	}
	e = &t[slot];
	e->key = mr->key;
	e->addr = (uint64_t)(uintptr_t)mr->addr;
	e->len = mr->len;
	e->base = mr->base;
	e->pid = getpid();
	e->access = mr->access;
	e->vni = mr->vni;
	e->in_use = 1;
out:
	ssemu_region_unlock(r);
	return ret;
}

int ssemu_mr_dereg(struct ssemu_nic *nic, uint64_t key)
{
	struct ssemu_region *r;
	struct ssemu_mr_sh *t;
	uint32_t i, hwm;
	int ret;

	if (!nic)
		return -EINVAL;
	r = nic->fab->r;
	ret = ssemu_fab_check(nic->fab);
	if (ret)
		return ret;
	ret = ssemu_region_lock(r);
	if (ret)
		return ret;
	t = ssemu_r_mrs(r, nic->slot);
	hwm = SSEMU_MIN(ssemu_r_nic(r, nic->slot)->mr_hwm,
			(uint32_t)SSEMU_MRS_PER_NIC);
	ret = -ENOENT;
	for (i = 0; i < hwm; i++) {
		if (t[i].in_use && t[i].key == key) {
			/* the engine holds the lock while it works: no
			 * operation is using the entry now, none will */
			memset(&t[i], 0, sizeof(t[i]));
			ret = 0;
			break;
		}
	}
	ssemu_region_unlock(r);
	return ret;
}
