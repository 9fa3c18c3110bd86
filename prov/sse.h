/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse.h: private structures of the slingshot_emu libfabric provider.
 *
 * The provider turns libfabric objects into calls on the emulated fabric
 * (include/slingshot_emu/ssemu.h) and never sees a packet; the emulator
 * never sees a libfabric object.
 *
 * Object map:
 *   sse_fabric  fi_fabric    a handle on one emulated fabric (sse_emu)
 *   sse_domain  fi_domain    this process's NIC on that fabric
 *   sse_ep      fi_endpoint  one ssemu_ep (a pid on the NIC)
 *   sse_av/cq/cntr/eq/mr     plain provider objects
 *
 * Locking.  Each domain has one mutex, domain->lock.  It protects every
 * object opened on the domain (endpoints and their queues, CQs, counters'
 * bindings, AVs, MRs) and serialises all calls on the domain's ssemu
 * endpoints, whose rings are single-producer/single-consumer.  Data calls,
 * CQ and counter reads and the progress thread take it; nothing takes
 * another lock while holding it, except the leaf locks of an EQ
 * (eq->lock) and the process-wide emulator registry (sse_emu_lock, taken
 * only at open/close).  Functions named __sse_* expect the domain lock held.
 * Blocking waits (ssemu_ep_wait) happen with no lock held.
 */
#ifndef SSE_H
#define SSE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <slingshot_emu/fi_slingshot_emu_ext.h>
#include <slingshot_emu/ssemu.h>

#include "ssemu_compiler.h"
#include "sse_list.h"
#include "sse_pool.h"
#include "sse_proto.h"
#include "sse_auth.h"

#define SSE_PROV_NAME "slingshot_emu"
#define SSE_PROV_VERSION FI_VERSION(0, 1)
#define SSE_FI_VERSION FI_VERSION(1, 17)
#define SSE_DOMAIN_NAME "sse0"

#define SSE_IOV_LIMIT 4
#define SSE_INJECT_SIZE SSEMU_INLINE_MAX
#define SSE_MAX_MSG_SIZE (1ULL << 32)
#define SSE_CQ_DATA_SIZE 8
#define SSE_MEM_TAG_FORMAT 0xAAAAAAAAAAAAAAAAULL
#define SSE_MIN_MULTI_RECV 64
#define SSE_MAX_EP_CNT 256
#define SSE_MAX_CQ_CNT 1024
#define SSE_MAX_CNTR_CNT 1024
#define SSE_MAX_MR_CNT SSEMU_MRS_PER_NIC
#define SSE_POLL_BATCH 32
/* libfabric's internal fi_getinfo flag (include/ofi.h) with which a
 * utility provider asks the core providers to layer over; stable since
 * 1.5, and fabtests rely on it too. */
#define SSE_OFI_CORE_PROV_ONLY (1ULL << 59)

/* Capabilities: only what is implemented. */
#define SSE_TX_CAPS (FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | FI_ATOMIC | \
		     FI_READ | FI_WRITE | FI_FENCE | FI_TRIGGER)
#define SSE_RX_CAPS (FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | \
		     FI_SOURCE | FI_SOURCE_ERR | FI_MULTI_RECV | FI_RMA | \
		     FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE | \
		     FI_RMA_EVENT)
#define SSE_DOM_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)
#define SSE_CAPS (SSE_TX_CAPS | SSE_RX_CAPS | SSE_DOM_CAPS)
/* FI_EP_DGRAM: untagged messages of at most eager_max bytes (a datagram
 * is never split into a rendezvous). */
#define SSE_DGRAM_CAPS (FI_MSG | FI_SEND | FI_RECV | FI_DIRECTED_RECV | \
			FI_SOURCE | FI_SOURCE_ERR | FI_MULTI_RECV | \
			SSE_DOM_CAPS)
#define SSE_TX_OP_FLAGS (FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | \
			 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)
#define SSE_RX_OP_FLAGS (FI_COMPLETION | FI_MULTI_RECV)
/*
 * Every RMA and atomic piece is posted ordered (SSEMU_SEND_ORDERED) from one
 * FIFO per endpoint, and the target NIC executes in arrival order, so
 * reads, writes and atomics to one target keep their posting order among
 * themselves, whatever their size.  Sends and RMA are queued apart: no
 * order between them is promised.
 */
#define SSE_RMA_ORDER (FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR | \
		       FI_ORDER_WAW | FI_ORDER_RMA_RAR | FI_ORDER_RMA_RAW | \
		       FI_ORDER_RMA_WAR | FI_ORDER_RMA_WAW | \
		       FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | \
		       FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)
#define SSE_MSG_ORDER (FI_ORDER_SAS | SSE_RMA_ORDER)
/* MR modes the provider honours when the application accepts them, and
 * does without otherwise (user keys, offset addressing). */
#define SSE_MR_MODE_OPTIONAL (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | \
			      FI_MR_RMA_EVENT)
#define SSE_COMP_ORDER FI_ORDER_NONE

/* ------------------------------------------------------------------ */
/* Provider, parameters, logging                                        */
/* ------------------------------------------------------------------ */

extern struct fi_provider sse_prov;

/* Every FI_SLINGSHOT_EMU_* variable, read once in fi_prov_ini. */
struct sse_env {
	char *store;		/* "shm" | "private" */
	char *fabric;		/* shm segment name */
	char *preset;
	char *config;		/* fabric configuration file, or NULL */
	char *tclass;		/* default traffic class name, or NULL */
	int port;		/* explicit NIC port, -1: placement */
	char *clock;		/* "virtual" | "realtime" */
	char *dilation;		/* NULL: the configuration's */
	size_t eager_max;	/* larger messages use rendezvous */
	bool rndv_read;		/* rendezvous by reads (else push) */
	size_t tx_size;
	size_t rx_size;
	int progress_budget;	/* engine events per progress call */
	int service_wait;	/* ms fi_av_insert waits for a service */
	int close_timeout;	/* ms an endpoint's close waits for what it
				 * sent to be delivered */
	bool model_stats;	/* time the engine, print it at domain close */
	char *placement;	/* policy name or "map:<file>", or NULL */
	uint64_t placement_seed;
	bool placement_seed_set;	/* else the fabric's seed */
};

extern struct sse_env sse_env;

#define SSE_WARN(subsys, ...) FI_WARN(&sse_prov, subsys, __VA_ARGS__)
#define SSE_INFO(subsys, ...) FI_INFO(&sse_prov, subsys, __VA_ARGS__)
#define SSE_DBG(subsys, ...) FI_DBG(&sse_prov, subsys, __VA_ARGS__)
#define SSE_WARN_ERR(subsys, msg, ret) \
	SSE_WARN(subsys, "%s: %s (%d)\n", msg, fi_strerror((int)-(ret)), \
		 (int)(ret))

/* Per-object context: the fabric address of the NIC or endpoint. */
#define SSE_DOM_WARN(dom, fmt, ...)					\
	SSE_WARN(FI_LOG_DOMAIN, "nic port %u: " fmt,			\
		 (dom)->nic_port, ##__VA_ARGS__)
#define SSE_DOM_INFO(dom, fmt, ...)					\
	SSE_INFO(FI_LOG_DOMAIN, "nic port %u: " fmt,			\
		 (dom)->nic_port, ##__VA_ARGS__)
#define SSE_EP_WARN(ep, fmt, ...)					\
	SSE_WARN(FI_LOG_EP_DATA, "ep %u:%u: " fmt,			\
		 SSEMU_ADDR_PORT((ep)->addr), SSEMU_ADDR_PID((ep)->addr),	\
		 ##__VA_ARGS__)
#define SSE_EP_INFO(ep, fmt, ...)					\
	SSE_INFO(FI_LOG_EP_CTRL, "ep %u:%u: " fmt,			\
		 SSEMU_ADDR_PORT((ep)->addr), SSEMU_ADDR_PID((ep)->addr),	\
		 ##__VA_ARGS__)

/* ------------------------------------------------------------------ */
/* Emulator handles shared by every fabric/domain of the process        */
/* ------------------------------------------------------------------ */

/*
 * One per (store, fabric name) in this process.  Open MPI's mtl and btl each
 * open a fabric and a domain; both share the ssemu_fabric and the NIC, and
 * each endpoint gets a pid of its own on that NIC.
 */
struct sse_emu {
	struct sse_dlist entry;
	enum ssemu_store store;
	char name[64];
	uint32_t fabric_id;
	struct ssemu_fabric *fabric;
	const struct ssemu_config *cfg;
	int ref;
	struct ssemu_nic *nic;
	int nic_ref;
	/* rendezvous sends' internal regions in the NIC's table (atomic:
	 * every domain of the process registers there) */
	uint64_t rndv_key_seq;
	int rndv_keys;
};

int sse_emu_get(enum ssemu_store store, const char *name,
		struct sse_emu **emu);
void sse_emu_put(struct sse_emu *emu);
int sse_emu_nic_get(struct sse_emu *emu, uint32_t port);
void sse_emu_nic_put(struct sse_emu *emu);
uint32_t sse_fabric_id(enum ssemu_store store, const char *name);
int sse_fabric_exists(enum ssemu_store store, const char *name);
int sse_errno_fi(int err);
int sse_env_store(enum ssemu_store *store);
int sse_env_config(struct ssemu_config *cfg);
const char *sse_default_fabric_name(void);

/* ------------------------------------------------------------------ */
/* Objects                                                              */
/* ------------------------------------------------------------------ */

struct sse_fabric {
	struct fid_fabric fabric_fid;
	struct sse_emu *emu;
	char *name;
	int ref;		/* domains + EQs (atomic) */
};

struct sse_ep;
struct sse_wait;

struct sse_domain {
	struct fid_domain domain_fid;
	struct sse_fabric *fabric;
	struct sse_emu *emu;
	uint32_t nic_port;
	pthread_mutex_t lock;	/* see the comment at the top */
	pthread_cond_t cond;	/* CQ/counter writes, signals, thread exit */
	int ref;		/* eps, cqs, cntrs, avs, mrs */
	struct sse_dlist eps;
	enum fi_threading threading;
	enum fi_progress data_progress;
	enum fi_av_type av_type;
	int mr_mode;
	uint32_t tclass;	/* FI_TC_* label */
	uint32_t emu_tclass;	/* index into the fabric's class table */
	struct sse_auth auth;	/* its service and VNI (sse_auth.c) */
	uint64_t next_key;
	struct sse_dlist mrs;
	struct sse_dlist trig_cntrs;	/* counters with triggered ops */
	unsigned progress_calls;	/* paces the peer liveness check */
	/* FI_SLINGSHOT_EMU_MODEL_STATS (atomic: no lock is held) */
	uint64_t model_ns, model_events, model_runs;
	/* FI_PROGRESS_AUTO */
	pthread_t thread;
	bool thread_running;
	bool thread_stop;
};

struct sse_av_entry {
	ssemu_addr_t addr;
	uint32_t valid;
	int64_t hnext;		/* next index in the hash chain, -1 */
};

struct sse_av {
	struct fid_av av_fid;
	struct sse_domain *domain;
	enum fi_av_type type;
	uint64_t flags;
	uint32_t fabric_id;
	size_t nports;
	struct sse_av_entry *tab;
	size_t count, cap;
	int64_t *hash;		/* heads of chains, hmask + 1 of them */
	size_t hmask;
	struct sse_eq *eq;
	int ref;		/* endpoints bound */
};

struct sse_cq_err {
	struct sse_dlist entry;
	struct fi_cq_err_entry err;
	size_t data_len;
	uint8_t data[sizeof(struct fi_sse_addr)];
};

struct sse_cq_slot {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	bool is_err;		/* placeholder for the next error */
};

/* Empty CQ reads in a row before the reader yields its core. */
#define SSE_IDLE_YIELD 64

struct sse_cq {
	struct fid_cq cq_fid;
	struct sse_domain *domain;
	enum fi_cq_format format;
	size_t entry_size;
	enum fi_wait_obj wait_obj;
	enum fi_cq_wait_cond wait_cond;
	/* A ring that grows instead of dropping: completions are never lost,
	 * whatever size the application asked for (FI_RM_ENABLED). */
	struct sse_cq_slot *ring;
	size_t cap, head, count;
	struct sse_dlist errs;	/* same order as the placeholders */
	size_t errs_taken;	/* errors read ahead of their placeholder */
	bool signaled;
	int ref;		/* endpoints and counters bound */
	struct fi_cq_err_entry last_err; /* for err_data returned by pointer */
	uint8_t last_err_data[sizeof(struct fi_sse_addr)];
	unsigned idle_reads;	/* empty reads in a row (see sse_cq_readfrom) */
	int fd;			/* FI_WAIT_FD: eventfd readable while count > 0,
				 * else -1 */
	struct sse_wait *wait;	/* FI_WAIT_SET */
};

struct sse_cntr {
	struct fid_cntr cntr_fid;
	struct sse_domain *domain;
	enum fi_wait_obj wait_obj;
	uint64_t val;		/* atomic */
	uint64_t err;		/* atomic */
	int ref;		/* endpoints, MRs, triggered ops, sets */
	int mr_ref;		/* MRs bound (atomic): see sse_cntr_progress */
	/* triggered operations waiting on it, by threshold (domain lock) */
	struct sse_dlist trigs;
	struct sse_dlist trig_entry;	/* domain->trig_cntrs while any */
	struct sse_wait *wait;		/* FI_WAIT_SET */
};

struct sse_eq_ev {
	struct sse_dlist entry;
	uint32_t event;
	bool is_err;
	size_t len;
	struct fi_eq_err_entry err;
	uint8_t data[];
};

struct sse_eq {
	struct fid_eq eq_fid;
	struct sse_fabric *fabric;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct sse_dlist events;
	enum fi_wait_obj wait_obj;
	int fd;			/* eventfd for FI_WAIT_FD, else -1 */
	int ref;		/* AVs and endpoints bound, poll sets */
	struct sse_wait *wait;	/* FI_WAIT_SET */
};

/*
 * Poll and wait sets (sse_poll.c, sse_wait.c).  A member is a CQ, a
 * counter or an EQ.  It has news when a CQ or EQ holds entries, or a
 * counter's value or error count moved since the set last reported it.
 */
struct sse_set_member {
	struct sse_dlist entry;
	struct fid *fid;
	uint64_t val, err;	/* counters: as last reported */
};

struct sse_wait {
	struct fid_wait wait_fid;
	struct sse_fabric *fabric;
	enum fi_wait_obj wait_obj;	/* FI_WAIT_FD or FI_WAIT_UNSPEC */
	int fd;			/* FI_WAIT_FD: eventfd, else -1 */
	bool fd_armed;		/* written since last reset (atomic) */
	pthread_mutex_t lock;	/* a leaf, under domain and EQ locks */
	pthread_cond_t cond;
	uint64_t signals;	/* member events so far */
	struct sse_dlist members;
	int ref;		/* members */
};

struct sse_poll {
	struct fid_poll poll_fid;
	struct sse_domain *domain;
	pthread_mutex_t lock;
	struct sse_dlist members;
};

int sse_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset);
int sse_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		  struct fid_wait **waitset);
int sse_wait_attach(struct fid_wait *waitset, struct fid *fid,
		    struct sse_domain *dom, struct sse_wait **wp);
void sse_wait_detach(struct sse_wait *w, struct fid *fid);
void sse_wait_signal(struct sse_wait *w);
int sse_wait_trywait(struct sse_wait *w);
int sse_set_member_news(struct sse_set_member *m, bool progress,
			bool update);
int sse_set_member_ref(struct fid *fid, int delta);

struct sse_mr {
	struct fid_mr mr_fid;
	struct sse_domain *domain;
	struct sse_dlist entry;
	uint64_t access;
	uint64_t flags;
	uint64_t offset;
	size_t iov_count;
	struct iovec iov[SSE_IOV_LIMIT];
	/* remote access: in the NIC's region table while nic_reg */
	bool remote;
	bool nic_reg;
	uint64_t base;		/* address peers name iov[0] by */
	uint32_t vni;		/* fi_mr_regattr auth key's VNI, 0: any */
	struct sse_cntr *rread_cntr, *rwrite_cntr;	/* fi_mr_bind */
};

/* ------------------------------------------------------------------ */
/* Rendezvous regions                                                   */
/* ------------------------------------------------------------------ */

/*
 * Read rendezvous.  Internal region keys have the top bit set, where
 * applications choosing their own keys are unlikely to go; at most
 * SSE_RNDV_KEYS_MAX of the NIC's SSEMU_MRS_PER_NIC entries are taken by
 * them (beyond, sends use the push protocol), so applications keep most
 * of the table.  A receive reads with one SSEMU_RMA_DIRECT read (which
 * takes no emulator buffer) up to SSEMU_RMA_DIRECT_MAX bytes, and keeps
 * up to SSE_RNDV_READS such reads in flight beyond (a push sender keeps
 * as many pieces in flight; 8 measured ~10% slower at 1 MiB).
 */
#define SSE_RNDV_KEY_BIT (1ULL << 63)
#define SSE_RNDV_KEYS_MAX (SSEMU_MRS_PER_NIC / 4)
#define SSE_RNDV_READS 16
/*
 * Regions of finished read rendezvous sends stay in the NIC's table, up to
 * SSE_RNDV_CACHE per endpoint (least recently used ones go first), for
 * later sends from the same buffers (as with the cxi provider's MR cache):
 * a registration takes the fabric's lock, which the engine holds while it
 * runs (~7% of 1 MiB fi_pingpong bandwidth).  Peers only read a region
 * while a send that named it in an RTS is outstanding.
 */
#define SSE_RNDV_CACHE 8

struct sse_rndv_reg {
	uint64_t key;
	uintptr_t addr;
	size_t len;
	unsigned users;		/* sends naming it now */
	uint64_t used;		/* last use, for LRU */
	bool valid;
};

/* ------------------------------------------------------------------ */
/* Endpoint and its operations                                          */
/* ------------------------------------------------------------------ */

enum sse_q { SSE_Q_MSG = 0, SSE_Q_TAG = 1 };

/* A send as an fi_send* or fi_tsend* call gives it. */
struct sse_send_req {
	const struct iovec *iov;
	size_t count;
	fi_addr_t dest;
	uint64_t tag;		/* tagged */
	uint64_t data;		/* with FI_REMOTE_CQ_DATA */
	uint64_t flags;		/* FI_* operation flags */
	void *context;
	bool tagged;
	bool no_comp;		/* fi_inject*: no completion entry */
};

/* A receive as an fi_recv* or fi_trecv* call gives it. */
struct sse_recv_req {
	const struct iovec *iov;
	size_t count;
	fi_addr_t src;		/* FI_ADDR_UNSPEC: any */
	uint64_t tag, ignore;	/* tagged */
	uint64_t flags;
	void *context;
	bool tagged;
};

/*
 * A send (user) or a control message (CTS, FIN) in progress, from the
 * endpoint's tx_pool (__sse_tx_get).  Whoever starts one sets every field
 * down to bounce; the progress state from hdr_posted on starts at zero.
 */
struct sse_tx {
	struct sse_dlist entry;	/* ep->tx_queue or ep->tx_rndv */
	struct sse_dlist all;	/* ep->tx_all, until freed */
	void *context;
	uint64_t cq_flags;	/* FI_SEND | FI_MSG/FI_TAGGED */
	uint64_t msg_id;
	ssemu_addr_t dest;
	uint64_t tag, data;
	uint8_t hflags;		/* SSE_HF_* */
	uint8_t op;		/* first message: EAGER, RTS, CTS or FIN */
	bool user;		/* counts against tx_size, completes to CQ */
	bool completion;	/* write a CQ entry on success */
	bool reported;		/* already completed (inject) */
	bool data_ready;	/* every message it needs is known */
	uint32_t tclass;
	size_t len;		/* payload length */
	size_t send_len;	/* bytes that go out (rendezvous: wanted) */
	size_t iov_count;
	struct iovec iov[SSE_IOV_LIMIT];
	uint64_t ctrl_hdr[SSEMU_HDR_WORDS];	/* CTS, FIN */
	void *bounce;		/* FI_INJECT copy (ep->bounce_pool) */
	/* progress state, zero at the start */
	bool hdr_posted;
	bool rkey_tried;	/* read rendezvous considered */
	bool rkey_reg;		/* rkey is in the NIC's table */
	bool fault;		/* its data could not be read: SSE_HF_FAULT
				 * goes out in place of the failed piece */
	int err;		/* first error, positive FI_E* */
	size_t next_off;	/* next payload byte to post */
	uint32_t posted, done;	/* ssemu messages posted / completed */
	uint64_t rkey;		/* read rendezvous: the buffer's region */
	struct sse_rndv_reg *rreg;	/* its cache entry, if any */
	struct sse_rndv_desc rts_desc;	/* read RTS payload */
};

/*
 * A posted receive, from the endpoint's rx_pool (__sse_rx_get): its poster
 * sets every field down to iov; the multi-recv state starts at zero.
 */
struct sse_rx {
	struct sse_dlist entry;	/* ep->rx_posted[q] */
	void *context;
	uint64_t flags;		/* op flags (FI_MULTI_RECV, FI_COMPLETION) */
	bool tagged;
	bool completion;
	bool posted;		/* still on rx_posted */
	ssemu_addr_t src;	/* SSEMU_ADDR_INVALID: any */
	uint64_t tag, ignore;
	size_t len;
	size_t iov_count;
	struct iovec iov[SSE_IOV_LIMIT];
	/* FI_MULTI_RECV, zero at the start */
	size_t mr_off;		/* next free byte */
	int mr_pending;		/* messages placed but not complete */
	bool mr_released;
};

/*
 * An RMA or atomic operation in progress (sse_rma.c): cut into pieces of at
 * most one ssemu_ep_rma each, posted in FIFO order from ep->rma_queue.
 * From the endpoint's rma_pool: __sse_rma_build sets every field down to
 * bounce; the progress state from active on starts at zero.
 */
struct sse_rma_op {
	struct sse_dlist entry;	/* ep->rma_queue while pieces remain */
	struct sse_dlist all;	/* ep->rma_all, until freed */
	struct sse_ep *ep;	/* whose pools it came from */
	void *context;
	uint64_t cq_flags;	/* FI_RMA|FI_ATOMIC, FI_READ|FI_WRITE */
	uint64_t data;		/* remote CQ data (SSE_HF_DATA) */
	ssemu_addr_t dest;
	uint32_t tclass;
	uint32_t op;		/* SSEMU_RMA_* */
	uint32_t aop, dtype;
	uint32_t rflags;	/* SSEMU_RMA_REMOTE_EVENT on the last piece */
	uint8_t hflags;		/* SSE_HF_DATA, SSE_HF_RREAD */
	bool completion;	/* CQ entry on success */
	bool no_comp;		/* fi_inject_*: no CQ entry, not even errors */
	bool fence;		/* wait for every earlier operation */
	size_t len;		/* bytes at the target */
	size_t piece_max;	/* multiple of elem */
	size_t iov_count, cmp_count, res_count, rma_count;
	struct iovec iov[SSE_IOV_LIMIT];	/* source, or read target */
	struct iovec cmp[SSE_IOV_LIMIT];	/* compare values */
	struct iovec res[SSE_IOV_LIMIT];	/* fetch/compare results */
	struct fi_rma_iov rma[SSE_IOV_LIMIT];	/* len in bytes */
	void *bounce;		/* FI_INJECT copy (ep->bounce_pool) */
	/* progress state, zero at the start */
	bool active;		/* counted in ep->rma_active */
	bool posting_done;	/* nothing more to post (all, or failed) */
	int err;		/* first error, positive FI_E* */
	int prov_errno;		/* the emulator's errno */
	size_t next_off;	/* next local byte to post */
	size_t rma_idx;		/* cursor in rma[] */
	uint64_t rma_off;
	uint32_t posted, done;	/* pieces */
};

/*
 * A posted ssemu_ep_rma, found again through the RMA_DONE cookie: a piece
 * of an RMA operation (op), or a rendezvous read of a receive (msg,
 * sse_rndv.c).  From the endpoint's piece_pool.
 */
struct sse_rma_piece {
	struct sse_dlist entry;	/* ep->rma_pieces */
	struct sse_rma_op *op;
	struct sse_msg *msg;
	size_t off;		/* local offset of its bytes */
	size_t len;
	bool early;		/* a read's bytes copied at its post */
};

/* An inbound message: unexpected, claimed, and/or being reassembled. */
struct sse_msg {
	struct sse_dlist entry;	/* rx_unexp[q] or rx_claimed */
	struct sse_dlist active;	/* rx_active while bytes are due */
	ssemu_addr_t src;
	uint64_t msg_id;
	bool tagged;
	bool rndv;
	bool rread;		/* rndv: read from the sender's region */
	bool discard;
	bool complete;		/* every expected byte arrived */
	uint8_t hflags;
	uint64_t tag, data;
	size_t total;		/* message length at the sender */
	size_t expect;		/* bytes that will arrive */
	size_t received;
	void *buf;		/* unexpected eager data */
	struct sse_rx *rx;	/* matched receive */
	size_t rx_off;		/* where the message starts in rx */
	size_t rx_len;		/* room for it in rx */
	void *claim_ctx;
	/* read rendezvous */
	struct sse_dlist rdq;	/* ep->rx_reads while reads are to post */
	uint64_t rkey, raddr;	/* the sender's region */
	uint32_t tclass;	/* the RTS's class: the reads use it too */
	size_t read_next;	/* next byte to ask for */
	unsigned reads_out;	/* reads posted, not done */
	int read_err;		/* first failure, -errno */
	int err;		/* positive FI_E* the receive fails with */
	int prov_errno;		/* its provider errno, if not err itself */
};

struct sse_ep {
	struct fid_ep ep_fid;
	struct sse_domain *domain;
	struct sse_dlist entry;	/* domain->eps */
	struct ssemu_ep *emu;
	ssemu_addr_t addr;
	uint32_t fabric_id;
	size_t max_frag;	/* ssemu_ep_max_msg */
	uint64_t caps;
	uint64_t tx_op_flags, rx_op_flags;
	size_t tx_size, rx_size, inject_size;
	size_t tx_iov_limit, rx_iov_limit;
	size_t eager_max;
	size_t max_msg_size;	/* FI_EP_RDM: 4 GiB; FI_EP_DGRAM: eager_max */
	enum fi_ep_type type;
	uint32_t tclass;	/* FI_TC_* label */
	uint32_t emu_tclass;
	bool enabled;
	size_t min_multi_recv;
	int waiters;		/* threads sleeping in ssemu_ep_wait on it */

	struct sse_av *av;
	struct sse_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	struct sse_cntr *send_cntr, *recv_cntr, *read_cntr, *write_cntr,
			*rread_cntr, *rwrite_cntr;
	struct sse_eq *eq;

	/* transmit */
	struct sse_dlist tx_queue;	/* not fully posted, FIFO */
	struct sse_dlist tx_rndv;	/* waiting for a CTS or FIN */
	struct sse_dlist tx_all;	/* every sse_tx alive */
	size_t tx_count;		/* user sends outstanding */
	uint64_t next_msg_id;
	/* receive */
	struct sse_dlist rx_posted[2];
	struct sse_dlist rx_unexp[2];
	struct sse_dlist rx_claimed;
	struct sse_dlist rx_active;
	struct sse_dlist rx_reads;	/* rendezvous with reads to post */
	struct sse_rndv_reg rndv_cache[SSE_RNDV_CACHE];
	uint64_t rndv_cache_clock;
	bool rndv_cma_refused;		/* reads of senders' memory were
					 * refused: have them push (CTS) */
	size_t rx_count;		/* receives posted */
	/* RMA and atomics (sse_rma.c) */
	struct sse_dlist rma_queue;	/* not fully posted, FIFO */
	struct sse_dlist rma_all;	/* every sse_rma_op alive */
	struct sse_dlist rma_pieces;	/* pieces posted, not done */
	size_t rma_active;		/* ops with pieces posted */
	/* initiated here, logged at close (FI_LOG_LEVEL=info) */
	uint64_t rma_reads, rma_writes, rma_atomics, rma_bytes;
	uint64_t rndv_reads, rndv_pushes;	/* rendezvous received */
	uint64_t rndv_early;	/* reads whose bytes were copied at the post */
	struct sse_dlist trigs;		/* triggered ops not yet run */
	int aliases;			/* fi_ep_alias endpoints open */
	/* data-path objects (sse_pool.h), under the domain lock */
	struct sse_pool tx_pool;	/* struct sse_tx */
	struct sse_pool rx_pool;	/* struct sse_rx */
	struct sse_pool rma_pool;	/* struct sse_rma_op */
	struct sse_pool piece_pool;	/* struct sse_rma_piece */
	struct sse_pool bounce_pool;	/* SSE_INJECT_SIZE bytes */
};

/*
 * fi_ep_alias: another fid_ep on the same endpoint, with op flags of its
 * own (fi_rdm_rma_trigger posts through an alias made with FI_TRIGGER).
 */
struct sse_ep_alias {
	struct fid_ep ep_fid;
	struct sse_ep *ep;
	uint64_t tx_op_flags, rx_op_flags;
};

/*
 * A triggered operation (sse_trigger.c): posted with FI_TRIGGER, it waits
 * on a counter until the counter reaches its threshold.  An RMA or atomic
 * is built (and checked) at submission and only queued at the trigger; a
 * send keeps its arguments.
 */
enum sse_trig_kind { SSE_TRIG_MSG, SSE_TRIG_TAGGED, SSE_TRIG_RMA };

struct sse_trig {
	struct sse_dlist entry;		/* cntr->trigs */
	struct sse_dlist ep_entry;	/* ep->trigs */
	struct sse_ep *ep;
	struct sse_cntr *cntr;
	uint64_t threshold;
	enum sse_trig_kind kind;
	void *context;
	uint64_t flags;		/* without FI_TRIGGER */
	fi_addr_t dest;
	/* sends: the call as it will run (send.iov is iov, without
	 * FI_TRIGGER) */
	struct sse_send_req send;
	struct iovec iov[SSE_IOV_LIMIT];
	void *bounce;		/* FI_INJECT data */
	/* RMA and atomics */
	struct sse_rma_op *op;
};

/*
 * The match rule, the one place it is written: a receive waiting for
 * @want_src (SSEMU_ADDR_INVALID: any source) and, when @tagged, for the
 * tag bits of @want_tag not set in @ignore, takes a message from @src
 * tagged @tag.  Posted receives are tried against an arriving message in
 * posting order, unexpected messages against a new receive (and FI_PEEK)
 * in arrival order.
 */
static inline bool sse_match(ssemu_addr_t want_src, bool tagged,
			     uint64_t want_tag, uint64_t ignore,
			     ssemu_addr_t src, uint64_t tag)
{
	if (want_src != SSEMU_ADDR_INVALID && want_src != src)
		return false;
	return !tagged || !((tag ^ want_tag) & ~ignore);
}

/* ------------------------------------------------------------------ */
/* Navigation                                                           */
/* ------------------------------------------------------------------ */

static inline struct sse_domain *sse_dom(struct fid_domain *d)
{
	return container_of(d, struct sse_domain, domain_fid);
}

extern struct fi_ops sse_ep_alias_fi_ops;

static inline struct sse_ep *sse_ep_of(struct fid_ep *e)
{
	if (e->fid.ops == &sse_ep_alias_fi_ops)
		return container_of(e, struct sse_ep_alias, ep_fid)->ep;
	return container_of(e, struct sse_ep, ep_fid);
}

/* The op flags of the fid_ep a call came through (an alias has its own). */
static inline uint64_t sse_tx_flags(struct fid_ep *e)
{
	if (e->fid.ops == &sse_ep_alias_fi_ops)
		return container_of(e, struct sse_ep_alias,
				    ep_fid)->tx_op_flags;
	return container_of(e, struct sse_ep, ep_fid)->tx_op_flags;
}

static inline uint64_t sse_rx_flags(struct fid_ep *e)
{
	if (e->fid.ops == &sse_ep_alias_fi_ops)
		return container_of(e, struct sse_ep_alias,
				    ep_fid)->rx_op_flags;
	return container_of(e, struct sse_ep, ep_fid)->rx_op_flags;
}

/*
 * Data-path objects from the endpoint's pools (domain lock held): only
 * the progress state at the end of each object is cleared; the caller
 * sets the rest.  Each goes back to the pool it came from.
 */
static inline struct sse_tx *__sse_tx_get(struct sse_ep *ep)
{
	return sse_pool_get_cleared(&ep->tx_pool,
				    offsetof(struct sse_tx, hdr_posted),
				    sizeof(struct sse_tx));
}

static inline struct sse_rx *__sse_rx_get(struct sse_ep *ep)
{
	return sse_pool_get_cleared(&ep->rx_pool,
				    offsetof(struct sse_rx, mr_off),
				    sizeof(struct sse_rx));
}

static inline struct sse_rma_op *__sse_rma_op_get(struct sse_ep *ep)
{
	return sse_pool_get_cleared(&ep->rma_pool,
				    offsetof(struct sse_rma_op, active),
				    sizeof(struct sse_rma_op));
}

/* Room for @len <= SSE_INJECT_SIZE bytes of injected data, or NULL. */
static inline void *__sse_bounce_get(struct sse_ep *ep, size_t len)
{
	return len <= SSE_INJECT_SIZE ? sse_pool_get(&ep->bounce_pool) : NULL;
}

static inline void __sse_bounce_put(struct sse_ep *ep, void *bounce)
{
	if (bounce)
		sse_pool_put(&ep->bounce_pool, bounce);
}

/* ------------------------------------------------------------------ */
/* Prototypes                                                           */
/* ------------------------------------------------------------------ */

/* sse_attr.c / sse_info.c */
struct fi_info *sse_info_alloc(const char *fabric_name,
			       enum fi_ep_type type);
int sse_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info);
int sse_tclass_lookup(const struct ssemu_config *cfg, uint32_t tclass,
		      uint32_t *emu_tclass);
int sse_tclass_resolve(const struct ssemu_config *cfg, uint32_t tclass,
		       uint32_t *emu_tclass);
int sse_addr_parse(const char *node, const char *service,
		   const char *fabric_name, uint32_t fabric_id,
		   uint64_t nports, bool src, struct fi_sse_addr *addr);
int sse_svc_remember(const char *name, uint32_t *key);
const char *sse_svc_name(uint32_t key, char *buf, size_t len);
uint64_t sse_svc_deadline(void);
int sse_svc_resolve(struct ssemu_fabric *fabric, uint32_t key,
		    uint64_t deadline, ssemu_addr_t *addr);
int sse_addr_check(const struct fi_sse_addr *addr, uint32_t fabric_id,
		   uint64_t nports);

/* sse_fabric.c */
int sse_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context);

/* sse_domain.c */
int sse_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context);
void sse_domain_ref(struct sse_domain *dom, int delta);

/* sse_av.c */
int sse_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **av, void *context);
int __sse_av_lookup(struct sse_av *av, fi_addr_t fi_addr,
		    ssemu_addr_t *addr);
fi_addr_t __sse_av_reverse(struct sse_av *av, ssemu_addr_t addr);

/* sse_cq.c */
int sse_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cq, void *context);
int __sse_cq_write(struct sse_cq *cq, void *context, uint64_t flags,
		   size_t len, void *buf, uint64_t data, uint64_t tag,
		   fi_addr_t src);
/* An error entry as fi_cq_readerr will return it; err_data (at most
 * sizeof(struct fi_sse_addr) bytes of it) is copied. */
int __sse_cq_write_err(struct sse_cq *cq, const struct fi_cq_err_entry *err);

/* sse_cntr.c */
int sse_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr, void *context);
void sse_cntr_inc(struct sse_cntr *cntr);
void sse_cntr_inc_err(struct sse_cntr *cntr);

/* sse_eq.c */
int sse_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eq, void *context);
int sse_eq_report(struct sse_eq *eq, uint32_t event, const void *buf,
		  size_t len, uint64_t flags);
int sse_eq_report_err(struct sse_eq *eq, fid_t fid, void *context,
		      uint64_t data, int err);

/* sse_mr.c */
extern struct fi_ops_mr sse_mr_ops;
struct sse_mr *__sse_mr_find(struct sse_domain *dom, uint64_t key);

/* sse_rma.c, sse_atomic.c */
extern struct fi_ops_rma sse_rma_ops;
extern struct fi_ops_atomic sse_atomic_ops;
struct sse_rma_req {
	uint32_t op, aop, dtype;
	uint64_t flags;		/* FI_* operation flags */
	void *context;
	uint64_t data;
	fi_addr_t dest;
	size_t elem;		/* element size (1 for RMA) */
	const struct iovec *iov;
	size_t iov_count;
	const struct iovec *cmp;
	size_t cmp_count;
	const struct iovec *res;
	size_t res_count;
	const struct fi_rma_iov *rma;	/* len in bytes */
	size_t rma_count;
	bool no_comp;		/* fi_inject_* */
};
ssize_t sse_rma_submit(struct sse_ep *ep, const struct sse_rma_req *req);
int __sse_rma_build(struct sse_ep *ep, const struct sse_rma_req *req,
		  struct sse_rma_op **opp);
ssize_t __sse_rma_start(struct sse_ep *ep, struct sse_rma_op *op,
			fi_addr_t dest);
void __sse_rma_op_free(struct sse_rma_op *op);
size_t sse_rma_piece_max(struct sse_ep *ep, uint32_t op, size_t elem);
void __sse_rma_progress(struct sse_ep *ep);
void __sse_rma_handle_done(struct sse_ep *ep, const struct ssemu_event *ev);
void __sse_rma_handle_remote(struct sse_ep *ep, const struct ssemu_event *ev);
void __sse_rndv_read_done(struct sse_ep *ep, struct sse_rma_piece *p,
			  const struct ssemu_event *ev);
void __sse_rma_flush(struct sse_ep *ep);
int sse_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		     enum fi_op op, struct fi_atomic_attr *attr,
		     uint64_t flags);

/* sse_ep.c */
int sse_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep, void *context);

/* sse_msg.c, sse_tagged.c */
extern struct fi_ops_msg sse_msg_ops;
extern struct fi_ops_tagged sse_tagged_ops;
ssize_t sse_send_common(struct sse_ep *ep, const struct sse_send_req *req);
int sse_send_check(struct sse_ep *ep, const struct sse_send_req *req);
ssize_t __sse_send(struct sse_ep *ep, const struct sse_send_req *req);

/* sse_trigger.c */
ssize_t sse_trigger_send(struct sse_ep *ep, const struct sse_send_req *req);
ssize_t sse_trigger_rma(struct sse_ep *ep, const struct sse_rma_req *req);
void __sse_trigger_progress(struct sse_domain *dom);
int __sse_trigger_cancel(struct sse_ep *ep, void *context);
void __sse_trigger_ep_flush(struct sse_ep *ep);
ssize_t sse_recv_common(struct sse_ep *ep, const struct sse_recv_req *req);
ssize_t sse_trecv_peek_claim(struct sse_ep *ep,
			     const struct sse_recv_req *req);

/* sse_tx.c */
int __sse_tx_start(struct sse_ep *ep, struct sse_tx *tx);
int __sse_tx_post(struct sse_ep *ep, struct sse_tx *tx);
void __sse_tx_posted(struct sse_ep *ep, struct sse_tx *tx);
void __sse_tx_check_done(struct sse_ep *ep, struct sse_tx *tx);
void __sse_tx_free(struct sse_ep *ep, struct sse_tx *tx);
void __sse_ep_tx_progress(struct sse_ep *ep);
void __sse_handle_send_done(struct sse_ep *ep, const struct ssemu_event *ev);

/* sse_rx.c */
void __sse_handle_recv(struct sse_ep *ep, const struct ssemu_event *ev);
bool __sse_rx_match_unexp(struct sse_ep *ep, struct sse_rx *rx,
			  struct sse_msg *msg);
/* How a message landed in a receive (__sse_rx_complete). */
struct sse_rx_done {
	ssemu_addr_t src;
	uint8_t hflags;		/* the message's SSE_HF_* */
	uint64_t tag, data;
	size_t total;		/* message length at the sender */
	size_t off, room;	/* where it went in the receive, room there */
	int err;		/* 0, or the positive FI_E* it fails with */
	int prov_errno;
};
void __sse_rx_complete(struct sse_ep *ep, struct sse_rx *rx,
		       const struct sse_rx_done *d);
void __sse_msg_complete(struct sse_ep *ep, struct sse_msg *msg, int err,
			int prov_errno);
int __sse_rx_fault(struct sse_ep *ep, ssemu_addr_t src);
void __sse_rx_free(struct sse_ep *ep, struct sse_rx *rx);
void __sse_msg_done(struct sse_ep *ep, struct sse_msg *msg);
void __sse_msg_free(struct sse_msg *msg);

/* sse_rndv.c */
void __sse_tx_reg(struct sse_ep *ep, struct sse_tx *tx);
void __sse_tx_unreg(struct sse_ep *ep, struct sse_tx *tx);
void __sse_rndv_cache_flush(struct sse_ep *ep);
int __sse_send_cts(struct sse_ep *ep, struct sse_msg *msg, size_t wanted);
int __sse_send_fin(struct sse_ep *ep, struct sse_msg *msg, int err);
void __sse_handle_cts(struct sse_ep *ep, const struct ssemu_event *ev);
void __sse_handle_fin(struct sse_ep *ep, const struct ssemu_event *ev);
void __sse_rndv_start(struct sse_ep *ep, struct sse_msg *msg);
void __sse_rndv_decline(struct sse_ep *ep, struct sse_msg *msg);
void __sse_rndv_read_progress(struct sse_ep *ep);
/* Domain progress calls between two looks at the peers of parked
 * rendezvous sends (__sse_rndv_check_peers). */
#define SSE_PEER_CHECK_PERIOD 1024
void __sse_rndv_check_peers(struct sse_ep *ep);

/* sse_progress.c */
void __sse_ep_progress(struct sse_ep *ep);
void __sse_domain_progress(struct sse_domain *dom);
void __sse_cq_progress(struct sse_cq *cq);
void sse_cq_progress(struct sse_cq *cq);
void sse_cntr_progress(struct sse_cntr *cntr);
void sse_domain_progress(struct sse_domain *dom);
int sse_engine_progress(struct sse_domain *dom);
void sse_model_account(struct sse_domain *dom, uint64_t ns, unsigned events);
void sse_model_report(struct sse_domain *dom);
void __sse_ep_flush(struct sse_ep *ep);
int sse_domain_wait(struct sse_domain *dom, int timeout_ms);
int sse_progress_thread_start(struct sse_domain *dom);
void sse_progress_thread_stop(struct sse_domain *dom);

/*
 * fi_control's FI_GETWAITOBJ and FI_GETWAIT for an object waited on with
 * @obj and, where it has one, file descriptor @fd (< 0: none).
 */
static inline int sse_wait_control(int command, void *arg,
				   enum fi_wait_obj obj, int fd)
{
	switch (command) {
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = obj;
		return 0;
	case FI_GETWAIT:
		if (fd < 0)
			return -FI_ENODATA;
		if (!arg)
			return -FI_EINVAL;
		*(int *)arg = fd;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

/*
 * A zeroed allocation for an inbound message (struct sse_msg): glibc's
 * calloc always takes its slow path, past the thread's cache of recently
 * freed chunks that malloc serves these from.
 */
static inline void *sse_zalloc(size_t size)
{
	void *p = malloc(size);

	if (p)
		memset(p, 0, size);
	return p;
}

/* iov helpers (sse_progress.c) */
size_t sse_iov_len(const struct iovec *iov, size_t count);
size_t sse_iov_slice(const struct iovec *iov, size_t count, size_t off,
		     size_t len, struct iovec *out, size_t max_out);
/* Copies between application iovs and the library's memory, through
 * ssemu_copy_user: 0, or -FI_EFAULT if application memory was not mapped
 * (or not writable). */
int sse_copy_to_iov(const struct iovec *iov, size_t count, size_t off,
		    const void *src, size_t len);
int sse_copy_from_iov(void *dst, const struct iovec *iov, size_t count,
		      size_t off, size_t len);

/* Time helpers */
uint64_t sse_now_ms(void);
uint64_t sse_now_ns(void);

/* sse_enosys.c: our own fi_no_* stubs (libfabric does not export them) */
int sse_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int sse_no_control(struct fid *fid, int command, void *arg);
int sse_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		    void **ops, void *context);
int sse_no_tostr(const struct fid *fid, char *buf, size_t len);
int sse_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		   void *ops, void *context);
extern struct fi_ops_cm sse_cm_ops;
extern struct fi_ops_collective sse_no_coll_ops;
int sse_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_pep **pep, void *context);
int sse_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		     struct fid_wait **waitset);
int sse_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
		       struct fid_ep **sep, void *context);
int sse_no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		     struct fid_poll **pollset);
int sse_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
		   struct fid_stx **stx, void *context);
int sse_no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
		   struct fid_ep **rx_ep, void *context);
int sse_no_query_collective(struct fid_domain *domain,
			    enum fi_collective_op coll,
			    struct fi_collective_attr *attr, uint64_t flags);
int sse_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		  struct fid_ep **tx_ep, void *context);
int sse_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		  struct fid_ep **rx_ep, void *context);
int sse_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		  struct fid_av_set **av_set, void *context);

#endif /* SSE_H */
