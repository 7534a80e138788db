/* SPDX-License-Identifier: MIT */
/*
 * The pause protocol: one 32-bit hold word per process (the `holds` array, indexed by tgid),
 * changed by compare-and-swap only, from BPF (which pauses) and from memtrack's ProcessHolds
 * (the one thing that resumes). These are its transitions as pure functions, compiled into the
 * BPF program and into the unit test that drives them from many threads.
 *
 * Signals settle by their order: of the SIGSTOPs and SIGCONTs sent to a process, the last one
 * decides whether it ends up stopped (a SIGCONT cancels every SIGSTOP still pending). The
 * protocol keeps, for every process, once no sender is in flight and no resume is under way:
 *   the last signal memtrack or BPF sent it was a SIGSTOP  <=>  its word holds a reason.
 * - A producer sets its reason and counts itself a sender *before* sending SIGSTOP, and stops
 *   counting itself after: a release waits while any sender is in flight, so no SIGCONT can
 *   overtake a SIGSTOP whose reason it did not see.
 * - The release that clears the last reason marks the word RESUMING, sends SIGCONT, then clears
 *   RESUMING; reasons set meanwhile (their SIGSTOPs may have been cancelled by that SIGCONT)
 *   make it send a SIGSTOP of its own, after its SIGCONT. Nothing releases while RESUMING is set.
 * - Someone else's SIGSTOP (a user's, the command's own) marks the word USER_STOP until their
 *   SIGCONT (BPF sees both at signal_generate): the last release then sends no SIGCONT, so the
 *   process stays stopped as they asked; one that came while the SIGCONT was on its way gets
 *   the releaser's SIGSTOP after it.
 * - Ring pressure re-sends its SIGSTOP with every record written above the stop mark, even when
 *   the reason is already held: a thread whose stop a resume cancelled stops at its next record.
 * - Someone else's SIGCONT to a held process cancels memtrack's SIGSTOP: BPF sends one again at
 *   once (a RESTOP), counted in the word until that SIGSTOP has landed, since the kernel sends it
 *   a little later (irq_work). Nothing releases while a RESTOP is on its way, so memtrack's own
 *   SIGCONT always comes after it. An exit, or a pid's new process, forgets RESTOPs in flight.
 * - The held process also stops itself again, from its own context, on its way back to user
 *   space (its CLD_CONTINUED notice to its parent): a RESTOP all the same, with
 *   bpf_send_signal, which every kernel has. Its SIGSTOP carries no tag, so the thread marks
 *   itself before sending and the RESTOP has landed when that SIGSTOP's signal_generate names
 *   the marked thread.
 * - A tracked process whose SIGCONT ends a pause the paused process restores by itself (its
 *   next record above the mark for pressure alone; its CLD_CONTINUED notice after a full stop)
 *   is paused itself, the reason and a RESTOP claimed at once and the SIGSTOP its own as above:
 *   for pressure when that was the pause (the pressure release ends both), CONTINUER otherwise,
 *   until the process it continued holds no reason. A SIGCONT storm would otherwise let the
 *   paused one write on through a full ring, or run before its probes exist.
 */
#ifndef MEMTRACK_HOLD_H
#define MEMTRACK_HOLD_H

#ifndef __bpf__
#include <linux/types.h>
#include <stdbool.h>
#endif

/* Why a process is held; one bit each. */
#define MT_HOLD_PRESSURE 0x1u /* a ring it writes to is nearly full */
#define MT_HOLD_SNAPSHOT 0x2u /* its first stack: held until its mappings are read */
#define MT_HOLD_SPAWN 0x4u    /* a new process: held until its probes are attached */
#define MT_HOLD_MODULE 0x8u   /* new code loaded: held until its allocators are probed */
#define MT_HOLD_CONTINUER 0x10u /* it continued a held process: held until that one's pause ends */
#define MT_HOLD_REASONS 5
#define MT_HOLD_REASON_MASK 0x1fu
#define MT_HOLD_RESUMING 0x100u      /* a release is between its SIGCONT and its end */
#define MT_HOLD_USER_STOP 0x200u     /* the last SIGSTOP or SIGCONT someone else sent it was a SIGSTOP */
#define MT_HOLD_RESTOP_ONE 0x1000u   /* RESTOPs: SIGSTOPs sent again after someone else's SIGCONT, */
#define MT_HOLD_RESTOP_MASK 0xf000u  /* not landed yet (at most 15 at once) */
#define MT_HOLD_SENDER_ONE 0x10000u  /* senders: producers between their claim and their SIGSTOP */
#define MT_HOLD_SENDER_MAX 0xffffu

/*
 * The `holds` array: elements of MT_HOLD_WORDS_PER_PAGE words, so the tgid's page is
 * tgid / MT_HOLD_WORDS_PER_PAGE and user space maps it as one flat array indexed by tgid.
 * Word 0 (tgid 0 is no process) is the closed flag: once set, no new pause is sent.
 */
#define MT_HOLD_WORDS_PER_PAGE 1024u
#define MT_HOLD_CLOSED_WORD 0u

struct mt_hold_page {
	__u32 words[MT_HOLD_WORDS_PER_PAGE];
};

/* Value of the `held` index (tgid -> this): every process held at least once and not exited. */
struct mt_held {
	__u64 start_boottime;              /* task->start_boottime: guards against pid reuse */
	__u64 since_ns[MT_HOLD_REASONS];   /* CLOCK_MONOTONIC ns when each reason was last taken */
	/*
	 * A process held for `unrun_reason` before it ran any code of its own (a new process, a new
	 * image): the user registers it will resume with (0: none watched), and that hold's
	 * since_ns. While that pause holds, the process reaches user space only if someone else's
	 * SIGCONT let it: when it then stops it has other registers (a RESTOP did not stop it in
	 * time), and memtrack says so.
	 */
	__u64 unrun_ip, unrun_sp, unrun_since;
	__u32 unrun_reason;
	/* MT_HOLD_CONTINUER: the process whose pause its SIGCONT ended (tgid); the pause lasts
	 * until that one holds no reason. */
	__u32 continued;
	/*
	 * The since_ns of the MODULE pause of an exec made by a thread other than the main one
	 * (which took the main thread's pid): links made for the old main thread trap nowhere in
	 * the new image, so that release gives the process new ones. 0: none.
	 */
	__u64 thread_exec_since;
};


static inline __u32 mt_hold_reasons(__u32 w) { return w & MT_HOLD_REASON_MASK; }
static inline __u32 mt_hold_senders(__u32 w) { return w >> 16; }
static inline __u32 mt_hold_restops(__u32 w) { return (w & MT_HOLD_RESTOP_MASK) / MT_HOLD_RESTOP_ONE; }

/* Index (0..MT_HOLD_REASONS-1) of a single reason bit. */
static inline __u32 mt_hold_reason_index(__u32 reason)
{
	return reason == MT_HOLD_PRESSURE ? 0 : reason == MT_HOLD_SNAPSHOT ? 1 : reason == MT_HOLD_SPAWN ? 2
	       : reason == MT_HOLD_MODULE ? 3 : 4;
}

/* Whether a CONTINUER pause may end: the process it continued (whose word is `continued_word`)
 * holds no reason of its own but being a continuer too. */
static inline bool mt_hold_continued_ended(__u32 continued_word)
{
	return !(mt_hold_reasons(continued_word) & ~MT_HOLD_CONTINUER);
}

/* Whether the pause watched for a process held before it ran still holds (`word`: its hold word). */
static inline bool mt_hold_unrun_watched(const struct mt_held *h, __u32 word)
{
	if (!h->unrun_ip || !(word & h->unrun_reason))
		return false; /* nothing watched, or the pause has ended: it may run */
	__u32 r = mt_hold_reason_index(h->unrun_reason);
	return r < MT_HOLD_REASONS && h->since_ns[r] == h->unrun_since; /* else a later pause, not watched */
}

/* Whether a process held before it ran, stopping with registers (ip, sp) while its hold word
 * is `word`, ran meanwhile during the pause that was watched. */
static inline bool mt_hold_ran_unheld(const struct mt_held *h, __u32 word, __u64 ip, __u64 sp)
{
	return mt_hold_unrun_watched(h, word) && (ip != h->unrun_ip || sp != h->unrun_sp);
}

/*
 * Whether a process held before it ran is at its very first instruction, (ip, sp) the
 * registers it was held with, while that pause still holds: someone else's SIGCONT let it
 * reach user space, and it has run nothing yet (stop_first_run stops it there).
 */
static inline bool mt_hold_first_run(const struct mt_held *h, __u32 word, __u64 ip, __u64 sp)
{
	return mt_hold_unrun_watched(h, word) && ip == h->unrun_ip && sp == h->unrun_sp;
}

/*
 * A producer's claim before it sends SIGSTOP for `reason`: the reason set, one more sender.
 * false: the claim must not be made (the reason is held already and `resend` is off, or the
 * sender count is full).
 */
static inline bool mt_hold_claim(__u32 old, __u32 reason, bool resend, __u32 *next)
{
	if ((old & reason) && !resend)
		return false;
	if (mt_hold_senders(old) == MT_HOLD_SENDER_MAX)
		return false;
	*next = (old | reason) + MT_HOLD_SENDER_ONE;
	return true;
}

/* After its SIGSTOP (sent or skipped): one sender less. */
static inline __u32 mt_hold_sent(__u32 old) { return mt_hold_senders(old) ? old - MT_HOLD_SENDER_ONE : old; }

enum mt_hold_release {
	MT_RELEASE_NOT_HELD = 0, /* the reason is not held: nothing to do */
	MT_RELEASE_BUSY,         /* a sender or a resume is in flight: try again shortly */
	MT_RELEASE_KEPT,         /* released; another reason still holds the process */
	MT_RELEASE_RESUME,       /* released, the last reason: send SIGCONT, then mt_hold_resumed */
};

static inline enum mt_hold_release mt_hold_release(__u32 old, __u32 reason, __u32 *next)
{
	if (!(old & reason))
		return MT_RELEASE_NOT_HELD;
	if (mt_hold_senders(old) || mt_hold_restops(old) || (old & MT_HOLD_RESUMING))
		return MT_RELEASE_BUSY;
	*next = old & ~reason;
	if (mt_hold_reasons(*next))
		return MT_RELEASE_KEPT;
	*next |= MT_HOLD_RESUMING;
	return MT_RELEASE_RESUME;
}

/* Whether the release of the last reason sends SIGCONT: not when someone else stopped the
 * process meanwhile (their stop is theirs to end). `word` is the word the release left. */
static inline bool mt_hold_resume_sends(__u32 word) { return !(word & MT_HOLD_USER_STOP); }

/* After the releaser's SIGCONT (`sent`, or its skipping it): RESUMING cleared. true: the
 * releaser must send a SIGSTOP of its own now, as its SIGCONT may have cancelled a SIGSTOP sent
 * meanwhile: for a reason taken, or by someone else. */
static inline bool mt_hold_resumed(__u32 old, bool sent, __u32 *next)
{
	*next = old & ~MT_HOLD_RESUMING;
	return sent && (mt_hold_reasons(old) != 0 || (old & MT_HOLD_USER_STOP));
}

/*
 * Someone else's SIGCONT reached a held process: a RESTOP is claimed before its SIGSTOP is sent.
 * `take`: a reason set with it (0: none), for a process that pauses itself with a RESTOP (the
 * sender of a SIGCONT that ended a pause the paused process restores by itself). false: nothing to send (no reason
 * held: the SIGCONT ended no pause of ours), or no room to count one more (the process then runs
 * until its pause ends; the caller counts it).
 */
static inline bool mt_hold_restop_claim(__u32 old, __u32 take, __u32 *next)
{
	if (!mt_hold_reasons(old | take) || (old & MT_HOLD_RESTOP_MASK) == MT_HOLD_RESTOP_MASK)
		return false;
	*next = (old | take) + MT_HOLD_RESTOP_ONE;
	return true;
}

/* A RESTOP's SIGSTOP landed, or was never sent: one less on its way. */
static inline __u32 mt_hold_restop_landed(__u32 old) { return mt_hold_restops(old) ? old - MT_HOLD_RESTOP_ONE : old; }

/* Every reason ends at once (the process exited, or memtrack resumes everything for good);
 * senders in flight and someone else's stop stay; RESTOPs are forgotten (a process gone takes
 * no signal; the final pass waits for them first). Returns the reasons that were held. */
static inline __u32 mt_hold_end_all(__u32 old, __u32 *next)
{
	*next = old & ~(MT_HOLD_REASON_MASK | MT_HOLD_RESUMING | MT_HOLD_RESTOP_MASK);
	return mt_hold_reasons(old);
}

#endif
