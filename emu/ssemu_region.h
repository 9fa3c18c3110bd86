/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fabric store: one contiguous, position-independent region holding the
 * whole model (engine, switches, NICs, endpoints, message slots, packets).
 * The in-process store is the same region in private memory; the shared
 * store is the same region in a POSIX shared-memory segment.  Every link is
 * an index or an offset from the region base, never a pointer, and every
 * index read back from the region is bounds-checked before use.
 *
 * Locking: region->lock (robust, process-shared) serialises the engine, NIC
 * attach/detach and endpoint open/close.  Outside it, only the SPSC rings
 * and the message slot state words are touched, each through acquire/release
 * atomics: an endpoint's tx ring (producer: the endpoint's owner; consumer:
 * the engine) and its event ring (producer: the engine; consumer: the owner).
 *
 * Layout (offsets in struct ssemu_region; ssemu_store.c's section table
 * has them all, in order):
 *   header | engine | nics[max_nics] | eps[neps] |
 *   msgs[... * msgs_per_ep] | bufs | rings | pkts[max_pkts] |
 *   swmap[nswitches] | portmap[nendpoints] | pair table[1 << pair_bits] |
 *   switches[max_switches] | VOQ rows of each switch | VOQ pool |
 *   mrs[max_nics * SSEMU_MRS_PER_NIC] | nic_eps[max_nics * eps_per_nic]
 * Nothing in it grows with max_nics squared or a switch's radix squared.
 *
 * Endpoint slots (neps: resources.max_eps, or max_nics * eps_per_nic) are
 * a pool the NICs share: a NIC's pid names one through its nic_eps entry.
 */
#ifndef SSEMU_REGION_H
#define SSEMU_REGION_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_auth.h"
#include "ssemu_compiler.h"
#include "ssemu_check.h"
#include "ssemu_engine.h"
#include "ssemu_ring.h"
#include <slingshot_emu/ssemu_rng.h>
#include "ssemu_topo.h"

#define SSEMU_MAGIC 0x5353454d55464142ULL	/* "SSEMUFAB" */
/* Bumped whenever the layout of anything in the segment changes: a process
 * refuses a segment of another version rather than misread it. */
#define SSEMU_LAYOUT_VERSION 49
#define SSEMU_NONE UINT32_MAX
/* Bytes of the header's write-once part (struct ssemu_region): a page. */
#define SSEMU_HDR_PRIVATE 4096
/* The page the layout aligns what is touched a page at a time to. */
#define SSEMU_PAGE 4096ULL
#define SSEMU_MAX_PROCS 256	/* processes attached at once */
#define SSEMU_MAX_JOBS 64	/* jobs with placement reservations at once */
#define SSEMU_MAX_BUFS 64	/* large buffers per endpoint */
/* endpoints a watched run's stop names (ssemu_fabric_watched) */
#define SSEMU_WATCH_FREED SSEMU_FABRIC_WATCHED_MAX
#define SSEMU_MAX_NICS (1u << 20)	/* NIC slots of a fabric (max_nics) */
#define SSEMU_MAX_EPS (1u << 20)	/* endpoint slots of a fabric (max_eps) */
#define SSEMU_MAX_PAIRS (1u << 30)	/* NIC pairs with state (max_pairs) */
#define SSEMU_SWLAT_BINS (SSEMU_SWLAT_MAX_NS + 1)	/* 1 ns bins */
/* A receiving NIC acknowledges every SSEMU_ACK_EVERY packets of a message,
 * its last packet, a packet that filled its source's window and a packet
 * marked by congestion, each ack counting for all the packets since the
 * previous one. */
#define SSEMU_ACK_EVERY 16
/* ... and in any case no later than this after a packet arrived (its
 * source may be waiting for it: its window shrank meanwhile). */
#define SSEMU_ACK_DELAY (1 * SSEMU_PS_PER_US)
/*
 * Virtual channels: a packet's VC is the number of switch-to-switch hops it
 * has taken, so buffer dependencies only ever point to a higher VC and the
 * Dragonfly's cyclic channel graph cannot deadlock (local, global, local
 * needs VCs 0-3; non-minimal paths up to 5).  Buffers and credits are kept
 * per (port, class, VC): a "vclass" is tc * SSEMU_NVC + vc.
 */
#define SSEMU_NVC 6
#define SSEMU_MAX_VCLASS (SSEMU_MAX_TCLASS * SSEMU_NVC)
/* Credit returns in flight kept per switch output (more take an event). */
#define SSEMU_CR_RING 8

/* Endpoint slots of a fabric with configuration @c (struct ssemu_config's
 * max_eps, 0: one for every pid of every NIC). */
static inline uint32_t ssemu_config_neps(const struct ssemu_config *c)
{
	uint64_t all = (uint64_t)c->max_nics * c->eps_per_nic;

	return c->max_eps ? c->max_eps :
			    (uint32_t)(all < UINT32_MAX ? all : UINT32_MAX);
}

enum ssemu_nic_state {
	SSEMU_NIC_FREE = 0,
	SSEMU_NIC_ATTACHED,
};

/* Message slot state bits (atomic). */
#define SSEMU_MSG_BUSY 1u	/* allocated by the owner */
#define SSEMU_MSG_TXDONE 2u	/* engine: acknowledged or failed */
#define SSEMU_MSG_RXDONE 4u	/* receiver released it (or never will) */
#define SSEMU_MSG_DONE (SSEMU_MSG_BUSY | SSEMU_MSG_TXDONE | SSEMU_MSG_RXDONE)

/* Message bookkeeping flags (engine only), for crash recovery. */
#define SSEMU_MSGF_QUEUED 1u	/* taken from the tx ring into the NIC */
#define SSEMU_MSGF_RXOVF 2u	/* on the receiver's event overflow list */
#define SSEMU_MSGF_TXOVF 4u	/* on the sender's event overflow list */
#define SSEMU_MSGF_RXPUSH 8u	/* RECV pushed (or being) at rx_pos */
#define SSEMU_MSGF_TXPUSH 16u	/* SEND_DONE pushed (or being) at tx_pos */
#define SSEMU_MSGF_RMABEGIN 32u	/* RMA: the target started on memory */
#define SSEMU_MSGF_RMAEXEC 64u	/* RMA: done (or refused) at the target */
#define SSEMU_MSGF_RESPQ 128u	/* RMA: on the target NIC's response queue */
#define SSEMU_MSGF_RTO 256u	/* lossy class: a retry timer is pending */
#define SSEMU_MSGF_REAL 512u	/* a real endpoint's, counted in flight
				 * (modelled jobs: ssemu_gen.c) */
#define SSEMU_MSGF_PARKED 1024u	/* RMA: waited for its target memory's
				 * owner to do it (ssemu_xuid.c) */
#define SSEMU_MSGF_DUE 2048u	/* posted for a later model time: its
				 * POST event takes it into the NIC */

/*
 * RMA operations use the message slot state bits differently from sends:
 * TXDONE says the initiator is done with the slot (it released the
 * RMA_DONE event, or never will), RXDONE that the target side is (the
 * operation done or refused, its RMA_REMOTE event pushed).  Results are
 * written into the slot's buffer by the engine when the target does the
 * operation; the response packets only model their way back.
 */

/* (a slot's state word, SSEMU_MSG_*, is kept apart in the mstate section:
 * an owner looking for a free slot or buffer reads a few lines, not a line
 * per slot)
 *
 * The slot's lines by who writes them, so that a message moves between
 * the sender's process and the engine's runner only the lines it must
 * (bench_fabric lines): the request in the first line and the third
 * with the start of the payload, written by the sender at the post and
 * only read by the engine; the engine's bookkeeping of a message in
 * flight in the second, which the sender writes only to reset it when it
 * takes the slot; what RMA and the overflow lists need, last. */
struct ssemu_msg {
	/* the request (the sender's) */
	uint32_t gen;		/* bumped on every allocation */
	uint32_t dst_crc;	/* CRC of dst, by the sender (shared stores) */
	ssemu_addr_t src, dst;
	uint32_t tclass, flags;
	uint64_t len;
	uint64_t hdr[SSEMU_HDR_WORDS];
	/* the engine's, reset by the sender when it takes the slot */
	uint64_t seq;		/* order in which the engine took it */
	uint32_t mflags;	/* SSEMU_MSGF_* */
	uint32_t rx_pos;	/* receiver's event ring index of its RECV */
	uint32_t tx_pos;	/* sender's event ring index of its SEND_DONE */
	uint32_t epoch;		/* lossy class: bumped on every go-back */
	uint32_t sent, arrived, acked;
	uint32_t rx_acked;	/* arrivals the receiver has acknowledged */
	uint32_t rx_marked;	/* a marked packet since the last ack */
	uint32_t next;		/* NIC injection queue */
	int32_t status;
	uint16_t vni;		/* the sending endpoint's, when taken */
	uint16_t pad16;
	ssemu_time_t post_time;
	/* the request, continued (the sender's); RMA (rma_op 0: a send):
	 * len above is the request's payload */
	uint64_t cookie;
	uint64_t rma_len;	/* bytes at the target (and of results) */
	uint64_t key;
	uint64_t raddr;
	uint32_t crc;		/* CRC-32 of the payload, by the sender */
	uint32_t buf;		/* large buffer index in the ep, or NONE */
	uint32_t npkts;
	uint32_t ep_gen;	/* sending endpoint's generation at post */
	uint8_t rma_op;		/* enum ssemu_rma_op */
	uint8_t aop, dtype;
	uint8_t pad8;
	uint32_t pad32;
	uint8_t data[SSEMU_INLINE_MAX];
	/* the engine's, for RMA and the event overflow lists */
	uint32_t rx_next;	/* receiver's event overflow list */
	uint32_t tx_next;	/* sender's event overflow list */
	uint32_t resp_npkts;	/* response packets the target sends */
	uint32_t resp_sent;	/* ... of which it injected */
	uint32_t resp_arrived;	/* ... of which reached the initiator */
	uint32_t resp_next;	/* target NIC's response queue */
} SSEMU_CACHELINE_ALIGNED;

_Static_assert(offsetof(struct ssemu_msg, seq) == 64 &&
	       offsetof(struct ssemu_msg, cookie) == 128 &&
	       offsetof(struct ssemu_msg, data) % 8 == 0,
	       "a message slot's request and the engine's bookkeeping each "
	       "in lines of their own");

/* A memory region in a NIC's table (ssemu_mr_reg). */
struct ssemu_mr_sh {
	uint64_t key;
	uint64_t addr;		/* start, in the owner's address space */
	uint64_t len;
	uint64_t base;		/* the address peers name addr[0] by */
	int32_t pid;		/* owner process */
	uint32_t access;	/* SSEMU_MR_* */
	uint32_t in_use;
	uint32_t vni;		/* the only VNI it serves, 0: any */
};

struct ssemu_ep_sh {
	uint32_t open;
	uint32_t gen;
	/* RECVs the engine delivered (under the lock); delivered - released
	 * are held: in the event ring, on the overflow list, or taken and
	 * not released */
	uint32_t delivered;
	uint32_t ev_futex;	/* bumped by an event push with waiters */
	uint32_t waiters;	/* processes sleeping on ev_futex */
	uint32_t rx_head, rx_tail;	/* RECV events waiting for ring space */
	uint32_t tx_head, tx_tail;	/* SEND_DONE events waiting */
	uint32_t nic;		/* NIC slot it is (or was last) open on */
	uint32_t pid;		/* ... and its pid there */
	/* a run of the engine by ssemu_fabric_run_until_watched stops after
	 * an event that frees one of its message slots (ssemu_ep_watch) */
	uint32_t watch;
	/* (the engine's fields above and these in the first cache line,
	 * which the owner's sends and releases do not write: a post does
	 * not take it from the engine's process, nor a delivery from the
	 * owner's) */
	uint64_t tx_ring_off;	/* region offsets */
	uint64_t ev_ring_off;
	/* owner only, from here: */
	uint32_t released;	/* RECVs it released (delivered, above) */
	uint32_t buf_msg[64];	/* message using each buffer */
	uint32_t svc;		/* service and VNI it holds (ssemu_auth.c) */
	uint16_t vni;
	uint16_t pad16;
} SSEMU_CACHELINE_ALIGNED;

struct ssemu_nic_sh {
	uint32_t state;
	int32_t owner_pid;
	uint32_t port;
	uint32_t job;
	int32_t rank;
	uint32_t gen;
	uint32_t ev_futex;	/* the same, for a push to any of its eps */
	uint32_t waiters;	/* processes sleeping on ev_futex */
	uint32_t rx_unacked;	/* packets arrived, their ack still pending */
	uint32_t jobslot;	/* its job's reservation, or SSEMU_NONE */
	/* model: injection */
	uint32_t inj_head, inj_tail;	/* messages to packetise */
	uint32_t ack_head, ack_tail;	/* ack packets to send */
	uint32_t done_pending;	/* a TX_DONE event is scheduled */
	uint32_t wait_pkt;	/* stalled on an empty packet pool */
	uint32_t resp_head, resp_tail;	/* RMA results to send back */
	uint32_t mr_hwm;	/* table entries [0, mr_hwm) may be in use */
	uint32_t pkt_seq;	/* packets it made (their seq) */
	uint32_t owner_uid;	/* real uid of owner_pid (ssemu_xuid.c) */
	uint32_t pad;
	ssemu_time_t busy_until;	/* the edge link serialises until then */
	uint32_t credits[SSEMU_MAX_TCLASS];
	struct ssemu_nic_stats stats;
	/* credits on their way back from the edge switch, as a switch
	 * output's (cr_tc: the class), and when a kick for them is due */
	ssemu_time_t cr_time[SSEMU_CR_RING];
	uint8_t cr_tc[SSEMU_CR_RING];
	uint16_t cr_cells[SSEMU_CR_RING];	/* credit returned, in cells */
	uint8_t cr_head, cr_n;
	ssemu_time_t kick_at;
} SSEMU_CACHELINE_ALIGNED;	/* a NIC's fields on its own lines */

/*
 * What a NIC keeps toward another NIC, in the pair table (ssemu_pair.c):
 * only pairs with packets in flight or queued, or whose congestion state
 * is not a fresh pair's, have an entry.  An injection and an
 * acknowledgement each touch several of these fields, side by side.
 */
struct ssemu_pair {
	uint64_t key;		/* (nic + 1) << 32 | dnic; 0: a free entry */
	uint64_t pause;		/* next injection not before (FGFC) */
	uint64_t slow;		/* FGFC pacing ends (ps) */
	uint32_t cwnd;		/* congestion window, 1/256 packets */
	uint32_t gap;		/* FGFC gap between packets (ps) */
	uint32_t cc_acked;	/* packets acknowledged since the last cut */
	uint16_t window;	/* data packets in flight */
	uint16_t egq;		/* data packets queued at the destination's
				 * edge output */
	uint16_t path;		/* ordered flows: the current via */
	uint16_t pad[3];
};

/* Pairs a NIC is the source (from) or the destination (to) of in the
 * table: a NIC that has none is reset without a look at the table. */
struct ssemu_pair_count {
	uint32_t from, to;
};

enum ssemu_pkt_type {
	SSEMU_PKT_DATA = 1,
	SSEMU_PKT_ACK,
	SSEMU_PKT_RESP,		/* RMA results, target to initiator */
};

struct ssemu_pkt {
	/* (what every hop touches first, in 40 bytes: one cache line for
	 * half of the packets, two for the rest) */
	uint32_t next;		/* free list, VOQ and ack queue link */
	uint8_t type;
	uint8_t tclass;
	uint8_t vc;		/* switch-to-switch hops taken so far */
	uint8_t marked;		/* congestion seen (DATA) or echoed (ACK) */
	uint8_t ack_req;	/* DATA: the source's window is now full */
	uint8_t phase;		/* non-minimal: 0 toward via, 1 toward dst */
	uint16_t via;		/* intermediate group + 1, 0: minimal path */
	uint16_t copy;		/* global link copy for minimal routing */
	uint16_t count;		/* ACK: data packets it acknowledges */
	uint32_t dst_port;	/* endpoint port */
	uint32_t bytes;		/* on the wire, with overhead */
	uint32_t in_port;	/* input port at the current switch */
	uint32_t to_gen;	/* NIC_ARRIVE: the target NIC's generation */
	ssemu_time_t sw_arrive;	/* arrival at the current switch */
	uint32_t src_nic;	/* source NIC (DATA) */
	uint32_t win;		/* source NIC's window slot */
	uint32_t msg;		/* global message index */
	uint32_t msg_gen;
	uint32_t idx;		/* DATA: its index in the message */
	uint32_t epoch;		/* DATA: the message's epoch when sent */
	uint32_t src_gen;	/* source NIC's attach generation */
	uint32_t src_port;	/* endpoint port */
	int32_t status;		/* ACK: delivery status */
	uint32_t crc;		/* DATA: its payload's CRC, at injection */
	ssemu_time_t inject_time;
	uint16_t vni;		/* its message's */
	/* its identity, for the model's draws and event order: made by the
	 * NIC at port src_port as its seq-th packet, on its trip-th trip
	 * through the fabric (a lossy class's resend) */
	uint16_t trip;
	uint32_t seq;
};

/* What a switch output keeps of one vclass. */
struct ssemu_port_vq {
	/* the inputs whose VOQ for this output and vclass is not empty
	 * (bit in): arbitration finds the next one without a scan */
	uint64_t inmask;
	uint32_t queued;	/* VOQ packets for this output */
	uint32_t credits;	/* downstream buffer */
};

/* Valid while the input's bit in its output's vq[vcl].inmask is set (an
 * empty VOQ's head and tail are left as they are, never read).  The VOQs
 * of one output and vclass, one per input, are a row of the VOQ pool,
 * taken while any of them holds a packet (a free row's first head links
 * the free rows). */
struct ssemu_voq {
	uint32_t head, tail;
};

struct ssemu_swport {
	/* (the fields every packet through the port touches come first: a
	 * hop costs fewer cache lines) */
	uint32_t done_pending;	/* an OUT_DONE event is scheduled */
	uint32_t rr;		/* round-robin pointer over inputs */
	uint32_t nqueued;	/* VOQ packets for this output, all vclasses */
	uint32_t queued_tc[SSEMU_MAX_TCLASS];	/* the same, per class */
	uint32_t vc_rr;		/* turns among the VCs of an input */
	/* bit vcl: vq[vcl].queued is not 0 (arbitration looks at these
	 * only) */
	uint64_t vclmask;
	ssemu_time_t busy_until;	/* the output serialises until then */
	ssemu_time_t wake_at;	/* done_pending: the earliest OUT_DONE */
	ssemu_time_t last_ready;		/* keeps each input FIFO */
	ssemu_time_t tok_time;	/* the token buckets (cls[]) are as of
				 * then: the output's last send */
	uint32_t tc_rr;				/* last class served */
	/* bit tc: both of the class's token buckets are full (at their
	 * depth), so a refill leaves them as they are and is skipped */
	uint32_t tok_full;
	uint32_t nflows;	/* edge output: source NICs with data packets
				 * queued for it (congestion control) */
	/* credits on their way back from downstream, oldest first (one link
	 * delay each, so in time order): they count from their time on,
	 * settled when the output next looks, and cost no event */
	uint8_t cr_vcl[SSEMU_CR_RING];
	uint16_t cr_cells[SSEMU_CR_RING];	/* credit returned, in cells */
	uint8_t cr_head, cr_n;
	ssemu_time_t cr_time[SSEMU_CR_RING];
	struct ssemu_peer peer;	/* the far end (ssemu_topo_peer, once) */
	/* from the port's link parameters (the configuration's for its
	 * kind), once: every hop needs them */
	ssemu_time_t delay;
	double bytes_per_ps;	/* rate_bps / 8e12 */
	uint32_t ps_per_byte;	/* 8e12 / rate_bps if whole, or 0 */
	uint32_t peer_inst;	/* the peer switch's model + 1, 0: not known */
	/* the last data packet sent: its message (index, generation), its
	 * index in the message and the input it came from (in UINT32_MAX:
	 * none yet, or the last packet sent was not a data packet), which
	 * tells a packet following it on the same path (sw_try_send's train
	 * count); in the line of the link's parameters a hop reads anyway */
	struct {
		uint32_t msg, msg_gen, idx, in;
	} last;
	/* what the port sent since its VNI last changed, not yet in its
	 * switch's table (ssemu_auth_port_count; pkts 0: nothing), in the
	 * same line: a send counts its VNI without the switch's first line,
	 * which a hop otherwise leaves alone */
	struct ssemu_vni_acc {
		uint16_t vni;
		uint16_t pkts;
		uint32_t bytes;
	} vacc;
	/* per class, what a hop at the output touches of it, side by side
	 * (two classes a line): the "shares" arbitration's token buckets in
	 * bytes for the class's guaranteed minimum (g) and its cap (c), and
	 * what the output sent of the class */
	struct {
		double g, c;
		uint64_t pkts, bytes;
	} cls[SSEMU_MAX_TCLASS];
	uint64_t drops;
	ssemu_time_t nb_time;	/* (nb_seen's, below) */
	/* what the upstream neighbours' adaptive routing sees of this
	 * output's queues, per class: a sample published at most every
	 * SSEMU_NB_PERIOD and seen one sample late (nb_load) */
	uint32_t nb_seen[SSEMU_MAX_TCLASS];
	uint32_t nb_next[SSEMU_MAX_TCLASS];
	/* per vclass of the fabric's classes (ntclass * SSEMU_NVC of
	 * them), side by side: a hop touches one vclass's.  So a port's
	 * size is its fabric's (ssemu_port_bytes), whole cache lines, each
	 * port's lines its own */
	struct ssemu_port_vq vq[];
};

/* The bytes of a port of a fabric with @ntclass classes. */
#define SSEMU_PORT_BYTES(ntclass)                                             \
	SSEMU_ALIGN_UP(sizeof(struct ssemu_swport) +                          \
			       (size_t)(ntclass) * SSEMU_NVC *                \
				       sizeof(struct ssemu_port_vq),          \
		       (size_t)SSEMU_CACHELINE)

static inline uint32_t ssemu_port_bytes(uint32_t ntclass)
{
	return (uint32_t)SSEMU_PORT_BYTES(ntclass);
}

/*
 * A port outside the segment with room for the most vclasses a fabric
 * has, and as many bytes as such a fabric's port: what a packet train
 * reads of a switch it has not modelled yet (its ports as sw_port_init
 * would make them).
 */
struct ssemu_swport_img {
	struct ssemu_swport port;
	struct ssemu_port_vq room[SSEMU_MAX_VCLASS];
	unsigned char pad[SSEMU_PORT_BYTES(SSEMU_MAX_TCLASS) -
			  sizeof(struct ssemu_swport) -
			  SSEMU_MAX_VCLASS * sizeof(struct ssemu_port_vq)];
};

struct ssemu_switch_sh {
	/* (what a send counts, in the first line, which the hop's other
	 * actions leave alone: its id for them is in the table after the
	 * switch map, ssemu_sw_id, and its VOQ rows are found from its
	 * index, ssemu_r_voq_row) */
	uint32_t sw;		/* topology switch id */
	uint32_t pad;
	/* sent, per VNI (the first two share the first line) */
	struct ssemu_vni_count vni[SSEMU_SW_VNIS];
	/* then its fabric's radix of ports (ssemu_sw_port), each on its own
	 * cache lines (none shares its first line with the previous port's
	 * last fields) */
	unsigned char ports[] SSEMU_CACHELINE_ALIGNED;
};

/* The bytes of a switch model of a fabric of @radix ports and @ntclass
 * classes (whole cache lines). */
static inline uint32_t ssemu_switch_bytes(uint32_t radix, uint32_t ntclass)
{
	return (uint32_t)offsetof(struct ssemu_switch_sh, ports) +
	       radix * ssemu_port_bytes(ntclass);
}

/*
 * A job placed by policy: its first rank reserved a port for each of its
 * ranks (resv[port] = slot << 16 | rank); the reservation lasts while any
 * NIC of the job is attached.
 */
struct ssemu_job_sh {
	uint32_t id;		/* launcher job id */
	uint32_t active;
	uint32_t nranks;
	uint32_t policy;	/* enum ssemu_place_policy */
	uint32_t nics;		/* NICs of the job attached now */
	uint32_t pad;
};

#define SSEMU_RESV(slot, rank) ((uint32_t)(slot) << 16 | (uint32_t)(rank))
#define SSEMU_RESV_SLOT(v) ((v) >> 16)
#define SSEMU_RESV_MAX_RANKS 65536

/*
 * A service directory entry (ssemu_svc.c): @name bound to the endpoint
 * with global index @ep, on the NIC attached with generation @nic_gen, by
 * process @pid.  An entry is live while all three still hold; a dead or
 * stale one is free for the next bind.
 */
struct ssemu_svc_sh {
	uint32_t state;		/* SSEMU_SVC_FREE or SSEMU_SVC_BOUND */
	uint32_t key;		/* ssemu_svc_key(name) */
	uint32_t ep;
	uint32_t nic_gen;
	ssemu_addr_t addr;
	int32_t pid;
	char name[SSEMU_SVC_NAME_MAX];
};

#define SSEMU_SVC_FREE 0
#define SSEMU_SVC_BOUND 1

/* The fabric lock (ssemu_lock.c). */
struct ssemu_lock {
	/* 0 free, else the holder's pid, with the top bit set once a
	 * process may sleep on it */
	uint32_t word;
	uint32_t taken;		/* times it was taken (by its holders) */
};

/*
 * What the engine's lock holder leaves, as it lets go, for the processes
 * that poll the fabric without the lock (ssemu_runner.c): the engine's
 * events handed out and pending.  The engine's own counters change with
 * every event, and a poller reading their line would take it from the
 * runner in the middle of its run; this line changes once a run.
 */
struct ssemu_run_pub {
	uint64_t executed;	/* the engine's executed, as it let go */
	uint32_t nlive;		/* ... and its nlive */
	/* bumped by the last runner as it goes off to a long copy: the
	 * others need not leave new work to it (ssemu_runner_step_aside) */
	uint32_t aside;
} SSEMU_CACHELINE_ALIGNED;

/*
 * The region's header has two parts.  The first, up to broken, is written
 * once by the creator before it publishes the region (ready) and never
 * again: the configuration and everything derived from it (topology,
 * counts, section offsets, policy indices).  Each process that maps a
 * shared segment maps that page privately and copies it (copy on write)
 * before it checks it (check_layout), so what it then uses as bounds and
 * offsets cannot change under it, whatever is written into the segment;
 * the segment's own copy is compared with it before every run of the
 * engine (a difference marks the fabric broken).  The second part, from
 * its own page on, is shared state.
 */
struct ssemu_region {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;
	uint64_t total_size;
	uint64_t config_hash;
	uint32_t owner_uid;
	uint32_t ready;		/* set (release) once initialised */
	/* the shared segment's mode and group as its creator set them:
	 * 0600, or 0660 with the configuration's share group (an attacher
	 * takes only a segment whose file says the same); 0 in private */
	uint32_t shm_mode, shm_gid;
	struct ssemu_config config;
	/* derived */
	struct ssemu_topo topo;
	uint32_t neps, nmsgs, nbufs;
	/* modelled jobs' ranks: NIC, endpoint slot and generator [0, gen_neps)
	 * each (ssemu_gen.c) */
	uint32_t gen_neps;
	uint32_t voq_per_switch;	/* VOQ rows: radix * ntclass * NVC */
	/* a switch model's bytes and its ports' (ssemu_switch_bytes,
	 * ssemu_port_bytes: by the radix and the classes) */
	uint32_t switch_bytes, port_bytes;
	/* where message slots lie (ssemu_msg_place): log2 of the slots an
	 * endpoint has, of a chunk's and of the endpoints' places */
	uint32_t msg_mb, msg_hb, msg_nb;
	uint32_t voq_rows;	/* rows in the VOQ pool (radix VOQs each) */
	uint32_t pair_bits;	/* the pair table has 1 << pair_bits entries */
	uint32_t pair_shift;	/* ... a NIC's stretch 1 << pair_shift */
	uint32_t max_pairs;	/* ... of which at most this many in use */
	/* sections */
	uint64_t engine_off, nics_off, eps_off, msgs_off, bufs_off, rings_off,
		 mstate_off,	/* each message slot's state word (atomic) */
		 pkts_off, swmap_off, portmap_off, switches_off,
		 voqrow_off,	/* each switch's VOQ rows, [out][vclass] */
		 voqs_off,	/* the VOQ pool: voq_rows rows of radix */
		 pair_off,	/* NIC pair table (struct ssemu_pair) */
		 pairn_off,	/* pairs of each NIC (struct ssemu_pair_count) */
		 work_off,	/* bitmap: endpoints with posted messages */
		 ovf_off,	/* bitmap: endpoints with overflowed events */
		 ready_off,	/* bitmap: endpoints with events pushed
				 * (private store: ssemu_fabric_ready) */
		 mrs_off,	/* memory region tables, one per NIC */
		 resv_off,	/* placement reservation per endpoint port */
		 nic_eps_off,	/* endpoint slot of each NIC's pids */
		 tel_off,	/* telemetry (ssemu_telemetry.c) */
		 gen_off;	/* modelled jobs (ssemu_gen.c) */
	uint32_t route_idx, arb_idx, cc_idx;	/* policy registries */

	/* ---- shared state ---- */
	/* Set (once) when the model found the segment's contents corrupt:
	 * every call on the fabric fails with -EIO from then on and no
	 * process attaches any more (ssemu_fail, ssemu_check.h). */
	struct ssemu_verdict verdict
		__attribute__((aligned(SSEMU_HDR_PRIVATE)));
	struct ssemu_lock lock SSEMU_CACHELINE_ALIGNED;
	struct ssemu_run_pub run_pub;	/* ssemu_region_unlock */
	/* model state: what every engine run touches shares the lock's
	 * page (what a message's run reads and writes of it in the two
	 * lines after run_pub), the tables of attach time come after it */
	uint32_t nnics;		/* NICs attached */
	/* the packet pool: freed packets, linked (NONE: none), and the
	 * high-water mark, packets [pkt_hwm, max_pkts) never used (nothing
	 * of them written: their pages cost nothing until needed) */
	uint32_t pkt_free;
	uint32_t pkt_hwm;
	uint32_t pkts_used;
	uint32_t sw_used;
	uint32_t pkt_waiters;	/* NICs with wait_pkt set */
	uint32_t voq_free;	/* free VOQ rows, linked; NONE: none */
	uint32_t voq_hwm;	/* rows from here on never used */
	uint32_t ready_on;	/* ready_off is kept (a private store) */
	uint32_t pairs_used;	/* pair table entries in use */
	uint32_t dead;		/* being removed: attachers must retry */
	/* endpoints watched (ssemu_ep_watch, ssemu_fabric_watched below) */
	uint32_t nwatch;
	uint64_t msg_seq;	/* messages taken from tx rings so far */
	ssemu_time_t tel_next;	/* telemetry: model time the open sample
				 * ends */
	uint64_t pkts_delivered, pkt_hops, switch_lat_sum;
	/* data packet-hops that followed the previous packet of their own
	 * message out of the same input to the same output with nothing
	 * else waiting for that output (sw_try_send) */
	uint64_t train_hops;
	uint64_t last_reap_ns;	/* wall clock of the last liveness check */
	ssemu_time_t pairs_swept;	/* model time of the last sweep */
	uint64_t recoveries;	/* engine runners that died mid-step */
	uint64_t lag_ps;	/* realtime: how far the model fell behind */
	/* (the hot lines end here.  Not in them: nparked, which every
	 * process's progress reads without the lock: on a line the runner
	 * writes for every packet, each poll would take it from the
	 * runner's core) */
	/* RMA requests parked for their memory's owner (park_head below) */
	uint32_t nparked;
	/* the first NIC slot and endpoint slot that may be free (every one
	 * before it is in use): attach and open look from there */
	uint32_t nic_hint, ep_hint;
	uint32_t pairs_full;	/* times a pair found the table full */
	/* the stall check's suspect: a slot (and its gen) that was in
	 * flight with the engine idle at executed == stall_exec */
	uint32_t stall_mi, stall_gen;
	uint64_t stall_exec;
	uint64_t wall_t0_ns;	/* realtime: wall clock at model time 0 */
	/* messages failed because nobody was at their destination any more,
	 * and messages a closing endpoint had posted that could not be
	 * delivered within its close bound (or whose process died) */
	uint64_t msgs_unreachable, msgs_discarded;
	uint64_t crc_errors;	/* packets and messages whose CRC failed */
	/* RMA requests whose target memory the engine's process may not
	 * touch (another uid): their last packets, linked through next,
	 * wait for the memory's owner to do them (ssemu_xuid.c); nparked
	 * of them */
	uint32_t park_head, park_tail;
	/* whether an event stopped the run of
	 * ssemu_fabric_run_until_watched; the watched endpoints whose
	 * slots it freed (nwatch_freed of them, more than the list holds:
	 * the list is lost, ssemu_fabric_watched) */
	uint32_t watch_hit;
	uint32_t nwatch_freed;
	uint32_t watch_freed[SSEMU_WATCH_FREED];
	/* per-hop switch latency (arrival to departure), 1 ns bins: the
	 * usual few hundred nanoseconds on the lock's page too */
	uint64_t swlat_hist[SSEMU_SWLAT_BINS];
	int32_t procs[SSEMU_MAX_PROCS];	/* attached processes, 0 = free */
	struct ssemu_job_sh jobs[SSEMU_MAX_JOBS];	/* placement */
	struct ssemu_svc_sh svc[SSEMU_MAX_SVCS];	/* service directory */
	struct ssemu_auth_sh auth;	/* VNI services (ssemu_auth.c) */
};

_Static_assert(offsetof(struct ssemu_region, verdict) == SSEMU_HDR_PRIVATE,
	       "the header's write-once part is one page");
_Static_assert(offsetof(struct ssemu_region, verdict) == SSEMU_VERDICT_OFF,
	       "ssemu_fail finds the verdict where the region has it");

/*
 * Telemetry, counted by the model under the fabric lock (public types in
 * ssemu.h).  The section is this header, then the sample ring (ring
 * samples, sample i in slot i % ring), then a job-slot cache per NIC.
 */
#define SSEMU_TEL_HASH 512	/* pair index: open addressing, 0 = empty */

/* A NIC's job slot, valid while gen is the NIC's attach generation. */
struct ssemu_tel_nic {
	uint32_t gen;
	uint32_t slot;
};

/* NICs whose job slot the telemetry keeps in its first page */
#define SSEMU_TEL_NICJOB_HEAD 32

/*
 * What every packet's hooks count of a class, in one line: the depth of
 * the edge queue each packet joins, since model time 0 (the class's
 * q_max, q_sum, q_n, as read) and in the open sample, and the open
 * sample's bytes injected.  The public counters keep these fields apart
 * (struct ssemu_tel_class, three arrays of struct ssemu_tel_sample): they
 * are folded in where a sample closes and where the telemetry is read.
 */
struct ssemu_tel_hot {
	uint64_t q_max, q_sum, q_n;
	uint64_t s_tx_bytes, s_q_max, s_q_sum, s_q_n;
	uint64_t pad;
} __attribute__((aligned(64)));

/*
 * What a message's hooks touch besides the three latency tables (jc,
 * jpair, pair) comes first, in one page (the section is page aligned):
 * the counters, the open sample, the pair index and the first NICs' job
 * slots.
 */
struct ssemu_tel_sh {
	ssemu_time_t interval;	/* 0: no time series */
	uint32_t ring;		/* samples the ring holds */
	uint32_t njobs;
	uint32_t npairs;
	uint32_t pad;
	uint32_t job[SSEMU_TEL_JOBS];
	uint64_t closed;	/* samples closed since model time 0 */
	uint64_t ring_off;	/* region offsets */
	uint64_t nicjob_off;	/* (of NICs SSEMU_TEL_NICJOB_HEAD on) */
	struct ssemu_tel_nic nicjob_head[SSEMU_TEL_NICJOB_HEAD];
	struct ssemu_tel_hot hot[SSEMU_MAX_TCLASS];
	/* (q_max, q_sum, q_n: in hot) */
	struct ssemu_tel_class tc[SSEMU_MAX_TCLASS];
	uint16_t pair_hash[SSEMU_TEL_HASH];	/* pair index + 1 */
	struct ssemu_tel_sample cur;	/* the open sample */
	struct ssemu_tel_counters jc[SSEMU_TEL_JOB_SLOTS][SSEMU_MAX_TCLASS];
	struct ssemu_tel_pair pair[SSEMU_TEL_PAIRS];
	struct ssemu_tel_pair other;
	struct ssemu_tel_jpair jpair[SSEMU_TEL_JOB_SLOTS][SSEMU_TEL_JOB_SLOTS];
};

/*
 * Under group windows (a private store only) the NIC pairs first seen in
 * a window wait here until every group has run it: the table above takes
 * the first it has room for in the order the engine's usual order sees
 * them, (model time, event key), not the order the groups run them.  The
 * area follows the job-slot cache, in the telemetry section of such a
 * fabric alone.
 */
struct ssemu_tel_cand {
	struct ssemu_tel_pair p;	/* counted so far in the window */
	ssemu_time_t t;			/* its first delivery's model time */
	uint64_t key;			/* and that event's key (ev_key) */
};

struct ssemu_tel_cands {
	uint64_t window;		/* the window they were seen in */
	uint32_t n;			/* candidates in c */
	uint32_t room;			/* the table's room as it began */
	struct ssemu_tel_cand c[SSEMU_TEL_PAIRS];
};

/*
 * The size and alignment of everything the segment holds, as this layout
 * version has them (x86-64 Linux): a change to any of them is a change of
 * the layout, which bumps SSEMU_LAYOUT_VERSION with the new numbers here.
 */
#define SSEMU_LAYOUT_IS(T, size, align)                                       \
	_Static_assert(sizeof(struct T) == (size) &&                          \
			       _Alignof(struct T) == (align),                 \
		       #T " is " #size " bytes aligned to " #align ": a "     \
		       "layout change bumps SSEMU_LAYOUT_VERSION")
#if defined(__x86_64__) && defined(__linux__)
/* the header */
SSEMU_LAYOUT_IS(ssemu_region, 69632, 4096);
SSEMU_LAYOUT_IS(ssemu_verdict, 160, 4);
SSEMU_LAYOUT_IS(ssemu_config, 2664, 8);
SSEMU_LAYOUT_IS(ssemu_mjob_desc, 176, 8);
SSEMU_LAYOUT_IS(ssemu_topo, 40, 8);
SSEMU_LAYOUT_IS(ssemu_job_sh, 24, 4);
SSEMU_LAYOUT_IS(ssemu_svc_sh, 88, 4);
/* the engine and the rings */
SSEMU_LAYOUT_IS(ssemu_engine, 2200, 8);
SSEMU_LAYOUT_IS(ssemu_ent, 32, 8);
SSEMU_LAYOUT_IS(ssemu_ev, 24, 4);
SSEMU_LAYOUT_IS(ssemu_chunk, 256, 8);
SSEMU_LAYOUT_IS(ssemu_bucket, 8, 4);
SSEMU_LAYOUT_IS(ssemu_ring, 192, 64);
SSEMU_LAYOUT_IS(ssemu_event, 104, 8);
/* NICs, endpoints, messages, memory regions */
SSEMU_LAYOUT_IS(ssemu_nic_sh, 384, 64);
SSEMU_LAYOUT_IS(ssemu_nic_stats, 96, 8);
SSEMU_LAYOUT_IS(ssemu_ep_sh, 384, 64);
SSEMU_LAYOUT_IS(ssemu_msg, 448, 64);
SSEMU_LAYOUT_IS(ssemu_mr_sh, 48, 8);
SSEMU_LAYOUT_IS(ssemu_pair, 48, 8);
SSEMU_LAYOUT_IS(ssemu_pair_count, 8, 4);
/* packets and switches */
SSEMU_LAYOUT_IS(ssemu_pkt, 96, 8);
SSEMU_LAYOUT_IS(ssemu_voq, 8, 4);
SSEMU_LAYOUT_IS(ssemu_swport, 592, 8);
SSEMU_LAYOUT_IS(ssemu_port_vq, 16, 8);
SSEMU_LAYOUT_IS(ssemu_peer, 16, 4);
SSEMU_LAYOUT_IS(ssemu_vni_acc, 8, 4);
SSEMU_LAYOUT_IS(ssemu_rng, 32, 8);
SSEMU_LAYOUT_IS(ssemu_switch_sh, 256, 64);
/* telemetry */
SSEMU_LAYOUT_IS(ssemu_tel_sh, 471936, 64);
SSEMU_LAYOUT_IS(ssemu_tel_nic, 8, 4);
SSEMU_LAYOUT_IS(ssemu_tel_hot, 64, 64);
SSEMU_LAYOUT_IS(ssemu_tel_sample, 1544, 8);
SSEMU_LAYOUT_IS(ssemu_tel_counters, 712, 8);
SSEMU_LAYOUT_IS(ssemu_tel_class, 72, 8);
SSEMU_LAYOUT_IS(ssemu_tel_pair, 688, 8);
SSEMU_LAYOUT_IS(ssemu_tel_jpair, 672, 8);
SSEMU_LAYOUT_IS(ssemu_lock, 8, 4);
SSEMU_LAYOUT_IS(ssemu_run_pub, 64, 64);
/* services and VNIs */
SSEMU_LAYOUT_IS(ssemu_vni_count, 24, 8);
SSEMU_LAYOUT_IS(ssemu_service, 72, 4);
SSEMU_LAYOUT_IS(ssemu_auth_sh, 3336, 8);
_Static_assert(offsetof(struct ssemu_region, lock) == 4288 &&
		       offsetof(struct ssemu_region, run_pub) == 4352 &&
		       offsetof(struct ssemu_region, nnics) == 4416 &&
		       offsetof(struct ssemu_region, nparked) == 4544 &&
		       offsetof(struct ssemu_region, procs) == 37456,
	       "the header's shared part: a layout change bumps "
	       "SSEMU_LAYOUT_VERSION");
#endif
#undef SSEMU_LAYOUT_IS

static inline bool ssemu_broken(const struct ssemu_region *r)
{
	return ssemu_load_relaxed(&r->verdict.broken) != 0;
}

/*
 * A CRC of what region @r holds, or 0 where no one else writes it.  The
 * CRCs that payloads, messages and events carry catch another process
 * writing a shared segment where it should not; a private store is this
 * process's own memory, written by the library alone, so they are taken
 * in shared stores only (the checks compare 0 with 0 in a private one).
 */
static inline uint32_t ssemu_r_crc(const struct ssemu_region *r,
				   uint32_t seed, const void *p, size_t n)
{
	return r->shm_mode ? ssemu_crc(seed, p, n) : 0;
}

/* An event's CRC, of every field but crc (which the engine sets to it
 * before the push and the owner checks after the poll). */
static inline uint32_t ssemu_event_crc(const struct ssemu_region *r,
				       const struct ssemu_event *ev)
{
	struct ssemu_event e;

	if (!r->shm_mode)
		return 0;
	e = *ev;
	e.crc = 0;
	return ssemu_crc(0, &e, sizeof(e));
}

/* Bytes of an endpoint's two rings, and where each starts (the layout's
 * own numbers: the offsets the segment holds are checked against them). */
static inline uint64_t ssemu_txring_bytes(const struct ssemu_config *c)
{
	return SSEMU_ALIGN_UP(ssemu_ring_bytes(c->msgs_per_ep,
					       sizeof(uint32_t)),
			      (uint64_t)SSEMU_CACHELINE);
}

/*
 * An endpoint's two rings, the send ring and then the event ring.  Rings
 * larger than a page start on a page boundary (the section starts on
 * one; they lie on small pages when the section is large): an endpoint
 * that sends and receives a few messages touches one page of them, their
 * control blocks and first entries, not two that straddle a boundary.
 * Rings of a page or less lie on huge pages, where a boundary costs
 * nothing, and follow each other on cache lines: a fabric whose every
 * endpoint is used (a simulation's) has them all resident.
 */
static inline uint64_t ssemu_rings_stride(const struct ssemu_config *c)
{
	uint64_t n = ssemu_txring_bytes(c) +
		     ssemu_ring_bytes(c->ev_ring, sizeof(struct ssemu_event));

	return n <= SSEMU_PAGE ? SSEMU_ALIGN_UP(n, (uint64_t)SSEMU_CACHELINE) :
				 SSEMU_ALIGN_UP(n, (uint64_t)SSEMU_PAGE);
}

/* Is the control block of a ring of @cap entries of @esize sound: its
 * geometry as made?  (Then every slot it names is inside it, whatever
 * head and tail say: a push to a ring whose counts are wild finds it
 * full, a pop takes a stale entry, whose own checks catch it.) */
static inline bool ssemu_ring_sane(struct ssemu_ring *ring, uint32_t cap,
				   uint32_t esize)
{
	return ring->mask == cap - 1 && ring->esize == esize &&
	       ring->data_off == sizeof(*ring);
}

/* Section accessors. */
#define SSEMU_AT(r, off) ((void *)((char *)(r) + (off)))

static inline struct ssemu_engine *ssemu_r_engine(struct ssemu_region *r)
{
	return SSEMU_AT(r, r->engine_off);
}

/*
 * Group windows (ssemu_config.group_windows): the engine's times are
 * encoded so that its (time, key) order takes model time in windows of W
 * (ssemu_config_group_window) and each window a Dragonfly group at a
 * time.  Window w holds (w - 1) W < t <= w W (window 0 the instant 0):
 * first the times before its last instant, group after group (an event of
 * group g at offset o in the window at (w (G + 1) + g) W + o, for G
 * groups), then that instant, w W, group after group (at (w (G + 1) + G) W
 * + g).  Nothing one group does reaches another within W, so a group's
 * events in a window depend on nothing the other groups do in it, and
 * each group's events keep their (time, key) order; and every event
 * before a multiple of W comes before every event at it (a telemetry
 * sample that ends there closes once, with all of its events in).
 * Without the mode the model's clock is the engine's.
 */
static inline ssemu_time_t ssemu_gw_enc(const struct ssemu_region *r,
					ssemu_time_t t, uint32_t g)
{
	uint64_t W = ssemu_config_group_window(&r->config) ?: 1;
	uint64_t G = r->topo.g, w = t ? (t - 1) / W + 1 : 0;

	if (t == w * W)
		return (w * (G + 1) + G) * W + g;
	return (w * (G + 1) + g) * W + (t - (w - 1) * W);
}

static inline ssemu_time_t ssemu_gw_dec(const struct ssemu_region *r,
					ssemu_time_t s)
{
	uint64_t W = ssemu_config_group_window(&r->config) ?: 1;
	uint64_t G = r->topo.g, w = s / ((G + 1) * W), o = s % ((G + 1) * W);

	if (o >= G * W)
		return w * W;
	/* (offset 0 is no event's: the window before's end) */
	return w ? (w - 1) * W + o % W : 0;
}

/* The latest model time the encoding holds (a later one would wrap). */
static inline ssemu_time_t ssemu_gw_max(const struct ssemu_region *r)
{
	return UINT64_MAX / 2 / (r->topo.g + 1);
}

/* Where the engine stops for "every event at or before @t": past the
 * end of @t's window if @t ends one, else before its start (the window is
 * run whole, or not yet). */
static inline ssemu_time_t ssemu_gw_limit(const struct ssemu_region *r,
					  ssemu_time_t t)
{
	uint64_t W = ssemu_config_group_window(&r->config) ?: 1;
	uint64_t S = (r->topo.g + 1) * W, w = t ? (t - 1) / W + 1 : 0;

	if (t >= ssemu_gw_max(r))
		return UINT64_MAX;
	if (t % W == 0)
		return (w + 1) * S - 1;
	return w * S - 1;
}

/* The model's clock under group windows (out of line: the usual clock's
 * readers stay short). */
ssemu_time_t ssemu_gw_now(const struct ssemu_region *r);

/* The model's clock: the engine's, decoded under group windows. */
static inline ssemu_time_t ssemu_r_now(struct ssemu_region *r)
{
	if (__builtin_expect(r->config.group_windows, 0))
		return ssemu_gw_now(r);
	return ((const struct ssemu_engine *)SSEMU_AT(r, r->engine_off))->now;
}

static inline struct ssemu_nic_sh *ssemu_r_nic(struct ssemu_region *r,
					       uint32_t i)
{
	return (struct ssemu_nic_sh *)SSEMU_AT(r, r->nics_off) + i;
}

static inline struct ssemu_ep_sh *ssemu_r_ep(struct ssemu_region *r, uint32_t i)
{
	return (struct ssemu_ep_sh *)SSEMU_AT(r, r->eps_off) + i;
}

/* Watch endpoint slot @sh's message slots, or stop (ssemu_ep_watch),
 * keeping the count of watched endpoints (the model's test of one). */
static inline void ssemu_ep_watch_set(struct ssemu_region *r,
				      struct ssemu_ep_sh *sh, bool on)
{
	if (!sh->watch == !on)
		return;
	sh->watch = on;
	r->nwatch += on ? 1 : (uint32_t)-1;
}

/* The slots of an endpoint's first chunk (ssemu_msg_place): the ones it
 * takes first (msg_alloc), a page's worth. */
#define SSEMU_MSG_CHUNK 8u
/* Message slots of at most this many bytes in all lie endpoint after
 * endpoint, on huge pages (the region asks for them there: no chunks);
 * more in chunks, the rest of each endpoint's on small pages. */
#define SSEMU_MSG_DENSE_MAX ((uint64_t)128 << 20)

/* ssemu_msg_place's numbers for configuration @c (the header's msg_mb,
 * msg_hb, msg_nb; msg_hb == msg_mb: one chunk, slot @i at place @i). */
static inline void ssemu_msg_bits(const struct ssemu_config *c,
				  uint32_t *mb, uint32_t *hb, uint32_t *nb)
{
	uint64_t neps = ssemu_config_neps(c);

	for (*mb = 0; (1u << *mb) < c->msgs_per_ep; (*mb)++)
		;
	for (*nb = 0; (1ULL << *nb) < neps; (*nb)++)
		;
	*hb = *mb;
	if (neps * c->msgs_per_ep * sizeof(struct ssemu_msg) >
	    SSEMU_MSG_DENSE_MAX)
		for (*hb = 0;
		     *hb < *mb && (1u << *hb) < SSEMU_MSG_CHUNK; (*hb)++)
			;
}

/*
 * Where message slot @i lies.  Slot k of endpoint e is @i = e << msg_mb |
 * k.  The slots are cut into chunks of 1 << msg_hb, and the first chunks
 * of every endpoint lie together, endpoint after endpoint (1 << msg_nb
 * places, the endpoints rounded up to a power of two), then the second
 * chunks, and so on (place = chunk, endpoint, slot; as the pair table's
 * stretches, ssemu_pair_slot): an endpoint with a few messages in flight
 * uses its first chunk alone (msg_alloc), and those of all endpoints are
 * dense, on huge pages, rather than a page an endpoint.
 */
static inline size_t ssemu_msg_place(const struct ssemu_region *r,
				     uint32_t i)
{
	uint32_t k = i & ((1u << r->msg_mb) - 1), e = i >> r->msg_mb;

	if (r->msg_hb == r->msg_mb)
		return i;	/* (one chunk: the same, fewer steps) */
	return (size_t)(k >> r->msg_hb) << (r->msg_nb + r->msg_hb) |
	       (size_t)e << r->msg_hb | (k & ((1u << r->msg_hb) - 1));
}

static inline struct ssemu_msg *ssemu_r_msg(struct ssemu_region *r, uint32_t i)
{
	return (struct ssemu_msg *)SSEMU_AT(r, r->msgs_off) +
	       ssemu_msg_place(r, i);
}

/* The index of the message slot at @m (ssemu_msg_place's inverse). */
static inline uint32_t ssemu_msg_index(struct ssemu_region *r,
				       const struct ssemu_msg *m)
{
	size_t p = (size_t)(m - (struct ssemu_msg *)SSEMU_AT(r, r->msgs_off));
	uint32_t hb = r->msg_hb, nb = r->msg_nb, k, e;

	if (hb == r->msg_mb)
		return (uint32_t)p;
	k = (uint32_t)(p >> (nb + hb)) << hb | (uint32_t)(p & ((1u << hb) - 1));
	e = (uint32_t)(p >> hb) & ((1u << nb) - 1);
	return e << r->msg_mb | k;
}

/* How many of an endpoint's slots, from its first, a new message looks
 * at before any other (msg_alloc, the generators): its first chunk, at
 * most SSEMU_MSG_CHUNK. */
static inline uint32_t ssemu_msg_first_slots(const struct ssemu_region *r)
{
	return SSEMU_MIN(1u << r->msg_hb, SSEMU_MSG_CHUNK);
}

/* The state word (SSEMU_MSG_*) of message slot @i, or of slot @m. */
static inline uint32_t *ssemu_r_mstate(struct ssemu_region *r, uint32_t i)
{
	return (uint32_t *)SSEMU_AT(r, r->mstate_off) + i;
}

static inline uint32_t *ssemu_msg_state(struct ssemu_region *r,
					const struct ssemu_msg *m)
{
	return ssemu_r_mstate(r, ssemu_msg_index(r, m));
}

static inline uint8_t *ssemu_r_buf(struct ssemu_region *r, uint32_t i)
{
	return (uint8_t *)SSEMU_AT(r, r->bufs_off) +
	       (size_t)i * r->config.buf_size;
}

static inline struct ssemu_pkt *ssemu_r_pkt(struct ssemu_region *r, uint32_t i)
{
	return (struct ssemu_pkt *)SSEMU_AT(r, r->pkts_off) + i;
}

static inline uint32_t *ssemu_r_swmap(struct ssemu_region *r)
{
	return SSEMU_AT(r, r->swmap_off);
}

/*
 * The topology id of switch model @inst (< sw_used, < max_switches), from
 * the dense table after the map rather than the switch's first line: a
 * hop names its switches by it (the events' keys, the pipeline's draw,
 * routing), and a table of 4 bytes a switch stays in the caches where a
 * line a switch would be one more miss each.  (Its users compute with it
 * and index nothing by it: a value a damaged segment put there routes a
 * packet to a port sw_ready refuses, as the switch's own copy did.)
 */
static inline uint32_t ssemu_sw_id(struct ssemu_region *r, uint32_t inst)
{
	return ssemu_r_swmap(r)[r->topo.nswitches + inst];
}

static inline uint32_t *ssemu_r_portmap(struct ssemu_region *r)
{
	return SSEMU_AT(r, r->portmap_off);
}

/* Reservation of each endpoint port: SSEMU_RESV(job slot, rank) or
 * SSEMU_NONE. */
static inline uint32_t *ssemu_r_resv(struct ssemu_region *r)
{
	return SSEMU_AT(r, r->resv_off);
}

static inline struct ssemu_switch_sh *ssemu_r_switch(struct ssemu_region *r,
						     uint32_t i)
{
	return (struct ssemu_switch_sh *)((char *)SSEMU_AT(r, r->switches_off) +
					  (size_t)i * r->switch_bytes);
}

/* Port @p of switch model @s (the model's memory whether @s is const or
 * not, as strchr's result is the string's). */
static inline struct ssemu_swport *
ssemu_sw_port(const struct ssemu_region *r, const struct ssemu_switch_sh *s,
	      uint32_t p)
{
	return (struct ssemu_swport *)((uintptr_t)s->ports +
				       (size_t)p * r->port_bytes);
}

/* Port @p of switch model @inst. */
static inline struct ssemu_swport *ssemu_r_port(struct ssemu_region *r,
						uint32_t inst, uint32_t p)
{
	return ssemu_sw_port(r, ssemu_r_switch(r, inst), p);
}

/*
 * Where the pair table's entry @i lies.  The table is a stretch of 1 <<
 * pair_shift entries per source NIC, probed from its first 1 <<
 * SSEMU_PAIR_HOT_BITS (ssemu_pair_home); a NIC with a few pairs uses the
 * start of its stretch alone.  So the stretches are cut into chunks of
 * that many entries, and the first chunks of every stretch lie together,
 * stretch after stretch, then the second chunks, and so on (@i = stretch,
 * chunk, entry; its place = chunk, stretch, entry): the entries in use
 * are dense (3 KiB a NIC) rather than one page a NIC.  The order of the
 * entries, which the table's probes and deletions go by, is @i's.
 */
#define SSEMU_PAIR_HOT_BITS 6u
/* Log2 of the entries of a chunk, for stretches of 1 << @shift. */
static inline uint32_t ssemu_pair_chunk_bits(uint32_t shift)
{
	return SSEMU_MIN(shift, SSEMU_PAIR_HOT_BITS);
}

static inline uint64_t ssemu_pair_slot(const struct ssemu_region *r,
				       uint64_t i)
{
	uint32_t sh = r->pair_shift, hb = ssemu_pair_chunk_bits(sh);
	uint64_t chunk = (i & ((1ULL << sh) - 1)) >> hb;

	return chunk << (r->pair_bits - sh + hb) | (i >> sh) << hb |
	       (i & ((1ULL << hb) - 1));
}

/* ssemu_pair_slot of @i, the entry after one lying at @prev: the next
 * place but where @i starts a chunk. */
static inline uint64_t ssemu_pair_slot_next(const struct ssemu_region *r,
					    uint64_t i, uint64_t prev)
{
	uint32_t hb = ssemu_pair_chunk_bits(r->pair_shift);

	return i & ((1ULL << hb) - 1) ? prev + 1 : ssemu_pair_slot(r, i);
}

/* Entry @i of the pair table (ssemu_pair.c finds a pair's). */
static inline struct ssemu_pair *ssemu_r_pair_ent(struct ssemu_region *r,
						  uint64_t i)
{
	return (struct ssemu_pair *)SSEMU_AT(r, r->pair_off) +
	       ssemu_pair_slot(r, i);
}

/* The pair table's lookups (ssemu_pair.c has the rest). */
static inline uint64_t ssemu_pair_key(uint32_t nic, uint32_t dnic)
{
	return (uint64_t)(nic + 1) << 32 | dnic;
}

static inline uint32_t ssemu_pair_key_nic(uint64_t key)
{
	return (uint32_t)(key >> 32) - 1;
}

static inline uint64_t ssemu_pair_mask(const struct ssemu_region *r)
{
	return (1ULL << r->pair_bits) - 1;
}

/* The entry a pair's probe starts at. */
static inline uint64_t ssemu_pair_home(const struct ssemu_region *r,
				       uint64_t key)
{
	uint32_t sh = r->pair_shift, dnic = (uint32_t)key;
	uint64_t h = ((uint64_t)dnic * 0x9e3779b97f4a7c15ULL) >> 32;

	/* (within the stretch's first chunk, ssemu_pair_slot: a NIC with a
	 * few pairs touches that alone, not its whole stretch, and one with
	 * the few dozen a saturated fabric leaves it finds each in a look or
	 * two; homes in fewer entries would make one long run of them) */
	return (((uint64_t)ssemu_pair_key_nic(key) << sh) +
		(h & ((1ULL << ssemu_pair_chunk_bits(sh)) - 1))) &
	       ssemu_pair_mask(r);
}

/* The entry of @key, or of the free entry where its probe stops (*@hit
 * false). */
static inline uint64_t ssemu_pair_probe(struct ssemu_region *r, uint64_t key,
					bool *hit)
{
	struct ssemu_pair *ent = SSEMU_AT(r, r->pair_off);
	uint64_t mask = ssemu_pair_mask(r), i = ssemu_pair_home(r, key), n;
	uint64_t slot = ssemu_pair_slot(r, i);

	for (n = 0; n <= mask; n++) {
		uint64_t k = ent[slot].key;

		if (k == key || !k) {
			*hit = k == key;
			return i;
		}
		i = (i + 1) & mask;
		slot = ssemu_pair_slot_next(r, i, slot);
	}
	*hit = false;
	return SSEMU_NONE;	/* (full: max_pairs keeps a free entry) */
}

/* The entry of pair @nic -> @dnic, or NULL: it has none (it is fresh);
 * then *@at is where its probe stopped (ssemu_pair_make). */
SSEMU_HOT
static inline struct ssemu_pair *ssemu_pair_lookup(struct ssemu_region *r,
						   uint32_t nic, uint32_t dnic,
						   uint64_t *at)
{
	bool hit;
	uint64_t i = ssemu_pair_probe(r, ssemu_pair_key(nic, dnic), &hit);

	*at = i;
	return hit ? ssemu_r_pair_ent(r, i) : NULL;
}

static inline struct ssemu_pair *ssemu_pair_find(struct ssemu_region *r,
						 uint32_t nic, uint32_t dnic)
{
	uint64_t at;

	return ssemu_pair_lookup(r, nic, dnic, &at);
}

static inline struct ssemu_pair_count *ssemu_r_pairn(struct ssemu_region *r,
						     uint32_t nic)
{
	return (struct ssemu_pair_count *)SSEMU_AT(r, r->pairn_off) + nic;
}

/* The VOQ row index of (@out, @vcl) at switch model @inst: valid while
 * output @out's vq[vcl].queued is not 0.  (Each model's rows follow the one
 * before's, from voqrow_off.) */
static inline uint32_t *ssemu_r_voq_row(struct ssemu_region *r,
					uint32_t inst, uint32_t out,
					uint32_t vcl)
{
	return (uint32_t *)SSEMU_AT(r, r->voqrow_off) +
	       (size_t)inst * r->voq_per_switch +
	       (size_t)out * r->config.ntclass * SSEMU_NVC + vcl;
}

/* VOQ @in of row @row of the pool (taken modulo the pool's size: the
 * model checks a row it reads before it uses it). */
static inline struct ssemu_voq *ssemu_r_voq_at(struct ssemu_region *r,
					       uint32_t row, uint32_t in)
{
	return (struct ssemu_voq *)SSEMU_AT(r, r->voqs_off) +
	       (size_t)(row % r->voq_rows) * r->topo.radix + in;
}

/* The VOQ (@in, @out, @vcl) of switch model @inst, while its row is
 * taken. */
static inline struct ssemu_voq *ssemu_r_voq(struct ssemu_region *r,
					    uint32_t inst, uint32_t in,
					    uint32_t out, uint32_t vcl)
{
	return ssemu_r_voq_at(r, *ssemu_r_voq_row(r, inst, out, vcl), in);
}

/* Memory region table of NIC @nic (SSEMU_MRS_PER_NIC entries). */
static inline struct ssemu_mr_sh *ssemu_r_mrs(struct ssemu_region *r,
					      uint32_t nic)
{
	return (struct ssemu_mr_sh *)SSEMU_AT(r, r->mrs_off) +
	       (size_t)nic * SSEMU_MRS_PER_NIC;
}

static inline uint64_t *ssemu_r_bits(struct ssemu_region *r, uint64_t off)
{
	return SSEMU_AT(r, off);
}

/*
 * The endpoint bitmaps (posted work, overflowed events) are a word per 64
 * endpoints and, on a fabric of more than SSEMU_BM_FLAT words, a summary
 * after them: a bit per word, set by whoever makes that word non-zero, so
 * that the engine looks at the words that have something rather than at
 * every word (4,360 of each at 279,040 endpoints).  Whoever clears a
 * summary bit does so before it takes the word's bits (an exchange of
 * each), so a bit set meanwhile comes with the summary bit it needs.
 * A smaller fabric scans its words directly, and its posts cost one
 * atomic.
 */
#define SSEMU_BM_FLAT 16

static inline uint32_t ssemu_bm_words(uint64_t neps)
{
	return (uint32_t)((neps + 63) / 64);
}

/* The summary's words after @words words of bitmap (0: none). */
static inline uint32_t ssemu_bm_sum_words(uint32_t words)
{
	return words > SSEMU_BM_FLAT ? (words + 63) / 64 : 0;
}

/* Set endpoint @i's bit in the bitmap @bits of @words words. */
static inline void ssemu_bm_set(uint64_t *bits, uint32_t words, uint32_t i)
{
	uint32_t w = i / 64;

	if (!ssemu_fetch_or(&bits[w], 1ULL << (i % 64)) &&
	    words > SSEMU_BM_FLAT)
		ssemu_fetch_or(&bits[words + w / 64], 1ULL << (w % 64));
}

/* ssemu_bm_set with plain stores, for a bitmap whose every reader and
 * writer holds the fabric lock. */
static inline void ssemu_bm_mark(uint64_t *bits, uint32_t words, uint32_t i)
{
	uint32_t w = i / 64;

	bits[w] |= 1ULL << (i % 64);
	if (words > SSEMU_BM_FLAT)
		bits[words + w / 64] |= 1ULL << (w % 64);
}

static inline struct ssemu_ring *ssemu_r_ring(struct ssemu_region *r,
					      uint64_t off)
{
	return SSEMU_AT(r, off);
}

/* Where the layout puts endpoint @epi's tx ring (its event ring follows). */
static inline uint64_t ssemu_ep_tx_ring_off(const struct ssemu_region *r,
					    uint32_t epi)
{
	return r->rings_off + (uint64_t)epi * ssemu_rings_stride(&r->config);
}

/*
 * Are endpoint @epi's rings where the layout puts them and sound (else the
 * fabric is marked broken)?  The engine asks before it touches them.
 */
SSEMU_HOT
static inline bool ssemu_ep_rings_bad(struct ssemu_region *r, uint32_t epi)
{
	const struct ssemu_config *c = &r->config;
	struct ssemu_ep_sh *sh = ssemu_r_ep(r, epi);
	uint64_t tx = ssemu_ep_tx_ring_off(r, epi);

	if (SSEMU_BAD(r, sh->tx_ring_off != tx ||
		      sh->ev_ring_off != tx + ssemu_txring_bytes(c),
		      "endpoint %u: ring offsets %#llx/%#llx, the layout has "
		      "%#llx/%#llx", epi,
		      (unsigned long long)sh->tx_ring_off,
		      (unsigned long long)sh->ev_ring_off,
		      (unsigned long long)tx,
		      (unsigned long long)(tx + ssemu_txring_bytes(c))))
		return true;
	if (SSEMU_BAD(r, !ssemu_ring_sane(ssemu_r_ring(r, tx), c->msgs_per_ep,
					  sizeof(uint32_t)) ||
		      !ssemu_ring_sane(ssemu_r_ring(r, sh->ev_ring_off),
				       c->ev_ring,
				       sizeof(struct ssemu_event)),
		      "endpoint %u: a ring's control block is corrupt", epi))
		return true;
	return false;
}

/* The NIC slot attached at endpoint port @port, or SSEMU_NONE (nobody, or
 * a corrupt map: then the fabric is marked broken). */
static inline uint32_t ssemu_port_nic(struct ssemu_region *r, uint64_t port)
{
	uint32_t nic;

	if (SSEMU_BAD(r, port >= r->topo.nendpoints, "endpoint port %llu "
		      "of %llu", (unsigned long long)port,
		      (unsigned long long)r->topo.nendpoints))
		return SSEMU_NONE;
	nic = ssemu_r_portmap(r)[port];
	/* (and the map and the NIC agree on the port) */
	if (nic != SSEMU_NONE &&
	    SSEMU_BAD(r, nic >= r->config.max_nics ||
		      ssemu_r_nic(r, nic)->port != port, "port %llu maps to "
		      "NIC slot %u of %u, at port %u",
		      (unsigned long long)port, nic, r->config.max_nics,
		      nic < r->config.max_nics ? ssemu_r_nic(r, nic)->port :
						 0))
		return SSEMU_NONE;
	return nic;
}

/* The model of topology switch @sw, or SSEMU_NONE (not modelled yet, or
 * a corrupt map: then the fabric is marked broken). */
static inline uint32_t ssemu_sw_inst(struct ssemu_region *r, uint32_t sw)
{
	uint32_t inst;

	if (SSEMU_BAD(r, sw >= r->topo.nswitches, "switch %u of %u", sw,
		      r->topo.nswitches))
		return SSEMU_NONE;
	inst = ssemu_r_swmap(r)[sw];
	if (inst != SSEMU_NONE &&
	    SSEMU_BAD(r, inst >= r->sw_used || inst >= r->config.max_switches,
		      "switch %u maps to model %u of %u", sw, inst,
		      r->sw_used))
		return SSEMU_NONE;
	return inst;
}

static inline uint32_t ssemu_msg_ep(struct ssemu_region *r, uint32_t msg)
{
	return msg / r->config.msgs_per_ep;
}

/* Endpoint slot of each pid of NIC @nic (eps_per_nic entries), or
 * SSEMU_NONE: not open. */
static inline uint32_t *ssemu_r_nic_eps(struct ssemu_region *r, uint32_t nic)
{
	return (uint32_t *)SSEMU_AT(r, r->nic_eps_off) +
	       (size_t)nic * r->config.eps_per_nic;
}

/*
 * The NIC endpoint slot @ep belongs to (or last belonged to: its messages
 * in flight are that NIC's until they are done).  Read from the segment,
 * so checked: inside the NIC table, and for an open endpoint, named by
 * that NIC's table at its pid; otherwise the fabric is broken (and NIC 0
 * is returned, so that callers index nothing out of range).
 */
static inline uint32_t ssemu_ep_nic(struct ssemu_region *r, uint32_t ep)
{
	const struct ssemu_ep_sh *sh = ssemu_r_ep(r, ep);
	uint32_t nic = sh->nic;

	if (SSEMU_BAD(r, nic >= r->config.max_nics, "endpoint slot %u: NIC "
		      "slot %u of %u", ep, nic, r->config.max_nics))
		return 0;
	if (ssemu_load_relaxed(&sh->open) &&
	    SSEMU_BAD(r, sh->pid >= r->config.eps_per_nic ||
			 ssemu_load_relaxed(&ssemu_r_nic_eps(r, nic)[sh->pid]) !=
				 ep,
		      "endpoint slot %u: open as pid %u of NIC slot %u, "
		      "which does not name it", ep, sh->pid, nic))
		return 0;
	return nic;
}

#endif
