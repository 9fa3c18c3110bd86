/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fixtures for the provider tests: they go through the public fi_* API with
 * the freshly built provider loaded by the system libfabric
 * (FI_PROVIDER_PATH, set by the test harness or defaulted to the build
 * tree).  Each binary picks the store (private or shm) and a fabric name of
 * its own before libfabric first reads the environment.
 */
#ifndef SSE_TEST_H
#define SSE_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <slingshot_emu/fi_slingshot_emu_ext.h>

#define SSE_TEST_PROV "slingshot_emu"
#define SSE_TEST_MAX_EP 4
#define SSE_TEST_TIMEOUT_MS 30000

/* assert_int_equal with the libfabric error string on failure. */
#define assert_fi_ok(expr)						\
	do {								\
		long _r = (long)(expr);					\
		if (_r < 0)						\
			fail_msg("%s = %ld (%s)", #expr, _r,		\
				 fi_strerror((int)-_r));		\
	} while (0)

/*
 * Set the environment for this test binary: provider path and filter,
 * FI_SLINGSHOT_EMU_STORE=@store and a fabric name unique to @name and the
 * pid.  Call first thing in main().  Also arms a watchdog alarm.
 */
void sse_test_init(const char *store, const char *name);

/*
 * A fabric for tests that run jobs as other uids, which only root can:
 * @return 77 (having said so) when not run as root.  Otherwise writes the
 * configuration @fmt (printf-like) to a file everyone may read (0644, as
 * a site's file is), whose path goes to @path, calls sse_test_init("shm",
 * @name), points FI_SLINGSHOT_EMU_CONFIG at the file and opens the fabric
 * from it into *@fab, held for the jobs as a launcher would.  @return 0,
 * or 1 on an error (said, the file removed).  sse_test_users_close
 * closes the fabric and removes the file.
 */
struct ssemu_fabric;
int sse_test_users_fabric(const char *name, char *path, size_t size,
			  struct ssemu_fabric **fab, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void sse_test_users_close(struct ssemu_fabric *fab, const char *path);

/* Hints for an RDM endpoint of this provider with @caps. */
struct fi_info *sse_test_hints(uint64_t caps);

/* Fabric MTU and the largest piece one emulator message carries, from
 * the configuration the tests run on. */
size_t sse_test_mtu(void);
size_t sse_test_piece(void);

struct sse_res {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	int nep;
	struct fid_ep *ep[SSE_TEST_MAX_EP];
	struct fid_cq *cq[SSE_TEST_MAX_EP];	/* tx and rx of ep[i] */
	struct fid_cntr *scntr[SSE_TEST_MAX_EP];
	struct fid_cntr *rcntr[SSE_TEST_MAX_EP];
	fi_addr_t addr[SSE_TEST_MAX_EP];	/* every ep in the one AV */
};

struct sse_res_opts {
	uint64_t caps;			/* 0: FI_MSG | FI_TAGGED */
	enum fi_cq_format format;	/* 0: FI_CQ_FORMAT_TAGGED */
	uint64_t cq_flags;		/* extra bind flags */
	enum fi_av_type av_type;	/* 0: FI_AV_TABLE */
	enum fi_progress progress;	/* 0: unspecified */
	enum fi_wait_obj cq_wait;	/* 0: FI_WAIT_NONE */
	bool counters;
	struct fi_info *hints;		/* overrides caps when set */
};

/* Open fabric, domain, one AV, @nep endpoints each with its own CQ (and
 * counters), enable them and insert every address.  Asserts on failure. */
void sse_res_open(struct sse_res *r, int nep, const struct sse_res_opts *o);
void sse_res_close(struct sse_res *r);

/*
 * Read one completion from @cq, driving progress on every other CQ of @r
 * (a peer endpoint in this process must progress too).  @return 1, or
 * -FI_EAVAIL (error entry waiting), or -FI_ETIMEDOUT.
 */
int sse_cq_wait(struct sse_res *r, struct fid_cq *cq, void *entry,
		fi_addr_t *src, int timeout_ms);
/* Same, for an error entry. */
int sse_cq_wait_err(struct sse_res *r, struct fid_cq *cq,
		    struct fi_cq_err_entry *err, int timeout_ms);
/* Drive progress on every CQ of @r for @ms milliseconds. */
void sse_progress_for(struct sse_res *r, int ms);

/* The next completion on @cq is @ctx with exactly @flags; or an error
 * completion for @ctx with @err (fails the test otherwise). */
void sse_cq_expect(struct sse_res *r, struct fid_cq *cq, void *ctx,
		   uint64_t flags);
void sse_cq_expect_err(struct sse_res *r, struct fid_cq *cq, void *ctx,
		       int err);
/* Read every CQ of @r once, asserting nothing is there. */
void sse_assert_cq_empty(struct sse_res *r, struct fid_cq *cq);

void sse_fill(void *buf, size_t len, unsigned seed);
/* @return the index of the first wrong byte, or -1. */
long sse_check(const void *buf, size_t len, unsigned seed);

#endif /* SSE_TEST_H */
