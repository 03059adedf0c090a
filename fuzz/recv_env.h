/* SPDX-License-Identifier: MIT */
/*
 * What fuzz_recv's victim NIC looks like, shared with the seed generator (gen_corpus_recv.c) so
 * that the seeds it captures are frames the victim would accept as they are.
 *
 * The victim has three queue pairs, created in this order on a fresh NIC:
 *   FZ_QP_RC   RC responder, path MTU 1024, remote write + read
 *   FZ_QP_UC   UC responder, path MTU 256, remote write, CQE scatter, a 4-entry receive CQ
 *   FZ_QP_REQ  RC requester with FZ_REQ_* outstanding (SEND, WRITE, two READs), path MTU 256,
 *              remote write only; its send PSNs wrap through 0xFFFFFF
 *
 * Input format (one fuzz input = up to FZ_MAX_FRAMES records):
 *   u8 flags (enum fz_fix)   u16 length, little-endian   length bytes of Ethernet frame
 * The flags ask the harness to repair fields a mutation cannot guess (keys and addresses that
 * change from run to run, checksums); a clear bit leaves the field exactly as the input has it.
 */
#ifndef GPUNIC_FUZZ_RECV_ENV_H
#define GPUNIC_FUZZ_RECV_ENV_H

#include <stdint.h>

#define FZ_VICTIM_IP 0x0a000001u       /* 10.0.0.1 */
#define FZ_PEER_IP 0x0a000002u         /* 10.0.0.2 */
#define FZ_VICTIM_MAC { 0x02, 0, 0, 0, 0, 0x01 }
#define FZ_PEER_MAC { 0x02, 0, 0, 0, 0, 0x02 }

enum fz_qp_index {
	FZ_QP_RC = 0,
	FZ_QP_UC = 1,
	FZ_QP_REQ = 2,
	FZ_NQP = 3,
};

/* First PSN each victim QP expects (requests) and sends (its own requests). */
#define FZ_RQ_PSN_RC 0u
#define FZ_RQ_PSN_UC 0x800000u
#define FZ_RQ_PSN_REQ 0x100u
#define FZ_SQ_PSN 0xFFFFFEu

/* The requester's outstanding work, in posting order. */
#define FZ_REQ_SEND_BYTES 600u         /* 3 packets at 256 */
#define FZ_REQ_WRITE_BYTES 40u
#define FZ_REQ_READ_BYTES 700u         /* 3 responses at 256 */
#define FZ_REQ_READ2_BYTES 8u

/* Region sizes (each surrounded by guard bytes). */
#define FZ_RW_BYTES 65536u             /* remote write + read */
#define FZ_RO_BYTES 4096u              /* remote read only */
#define FZ_LOCAL_BYTES 32768u          /* local write only: receive buffers, READ targets */
#define FZ_OTHER_BYTES 4096u           /* remote write + read, but in another PD */

/* Receive buffers the victim posts after every reset. */
#define FZ_RC_RECVS 4u
#define FZ_RC_RECV_BYTES 4096u
#define FZ_UC_RECVS 4u
#define FZ_UC_RECV_BYTES 1024u
#define FZ_REQ_RECVS 2u
#define FZ_REQ_RECV_BYTES 256u

#define FZ_MAX_FRAMES 16u

enum fz_fix {
	FZ_FIX_ADDR = 1u << 0,   /* MACs, IPs, UDP port; QPN field = index of a victim QP */
	FZ_FIX_PSN = 1u << 1,    /* PSN field is relative to the target QP's first PSN */
	FZ_FIX_RKEY = 1u << 2,   /* RETH rkey & 7 selects a key (enum fz_key) */
	FZ_FIX_VA = 1u << 3,     /* RETH VA is an offset from the selected region's start */
	FZ_FIX_LEN = 1u << 4,    /* IPv4 total length, UDP length and IPv4 checksum */
	FZ_FIX_ICRC = 1u << 5,   /* recompute the ICRC over the repaired frame */
	FZ_FIX_ALL = 0x3Fu,
	/* bits 6-7: extra engine polls after the frame */
};

/* RETH rkey selectors under FZ_FIX_RKEY. */
enum fz_key {
	FZ_KEY_RW = 0,
	FZ_KEY_RO = 1,
	FZ_KEY_LOCAL = 2,        /* the local region's rkey: it has no remote rights */
	FZ_KEY_OTHER_PD = 3,
	FZ_KEY_STALE = 4,        /* a deregistered region's rkey */
	FZ_KEY_WRONG_TAG = 5,    /* RW's index with another tag: a guessed key */
	FZ_KEY_RAW6 = 6,         /* 6 and 7: the field as it is */
	FZ_KEY_RAW7 = 7,
};

#endif /* GPUNIC_FUZZ_RECV_ENV_H */
