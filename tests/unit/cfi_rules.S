/*
 * Functions whose CFI is written by hand, one per kind of unwind row (tests/unit/test_cfi_table.cpp
 * knows each one's exact rows). Every instruction's size is fixed, noted as +offset after it, and
 * each function is 16-aligned and not a multiple of 16 long, so a NONE row follows it.
 */
	.text

	.macro FUNC name
	.p2align 4
	.globl \name
	.type \name, @function
\name:
	.endm

/* The frame-pointer prologue and epilogue: rsp-based, then rbp-based, then rsp again. */
FUNC cfi_rbp_frame
	.cfi_startproc
	push %rbp              /* +1 */
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp         /* +4 */
	.cfi_def_cfa_register %rbp
	sub $32, %rsp          /* +8 */
	nop                    /* +9 */
	leave                  /* +10 */
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	ret                    /* +11 */
	.cfi_endproc
	.size cfi_rbp_frame, .-cfi_rbp_frame

/* Without a frame pointer, with an early return (remember/restore state). */
FUNC cfi_rsp_frame
	.cfi_startproc
	push %rbx              /* +1 */
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	sub $24, %rsp          /* +5 */
	.cfi_def_cfa_offset 40
	test %edi, %edi        /* +7 */
	je 1f                  /* +9 */
	.cfi_remember_state
	add $24, %rsp          /* +13 */
	.cfi_def_cfa_offset 16
	pop %rbx               /* +14 */
	.cfi_def_cfa_offset 8
	ret                    /* +15 */
	.cfi_restore_state
1:	add $24, %rsp          /* +19 */
	.cfi_def_cfa_offset 16
	pop %rbx               /* +20 */
	.cfi_def_cfa_offset 8
	ret                    /* +21 */
	.cfi_endproc
	.size cfi_rsp_frame, .-cfi_rsp_frame

/* The outermost frame: the return address is undefined. */
FUNC cfi_end_frame
	.cfi_startproc
	.cfi_undefined %rip
	xor %ebp, %ebp         /* +2 */
	nop                    /* +3 */
	ret                    /* +4 */
	.cfi_endproc
	.size cfi_end_frame, .-cfi_end_frame

/* binutils' .plt rule, threshold 11 then 10 (DW_CFA_def_cfa_expression: breg7 8; breg16 0;
 * lit15; and; lit11/lit10; ge; lit3; shl; plus). */
FUNC cfi_plt11
	.cfi_startproc
	.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22
	nop                    /* +1 */
	nop                    /* +2 */
	ret                    /* +3 */
	.cfi_endproc
	.size cfi_plt11, .-cfi_plt11

FUNC cfi_plt10
	.cfi_startproc
	.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22
	ret                    /* +1 */
	.cfi_endproc
	.size cfi_plt10, .-cfi_plt10

/* CFA = rsp + 16 written as an expression (breg7 16), then rbp undefined. */
FUNC cfi_expr_rsp
	.cfi_startproc
	push %rax              /* +1 */
	.cfi_escape 0x0f, 0x02, 0x77, 0x10
	nop                    /* +2 */
	.cfi_undefined %rbp
	pop %rax               /* +3 */
	.cfi_def_cfa %rsp, 8
	ret                    /* +4 */
	.cfi_endproc
	.size cfi_expr_rsp, .-cfi_expr_rsp

/* Rules the walker cannot follow, one per row. */
FUNC cfi_unsupported
	.cfi_startproc
	nop                    /* +1: CFA on r10 */
	.cfi_def_cfa %r10, 0
	nop                    /* +2: CFA = *(rsp + 8), an expression */
	.cfi_escape 0x0f, 0x03, 0x77, 0x08, 0x06
	nop                    /* +3: CFA offset past 65535 */
	.cfi_def_cfa %rsp, 70000
	nop                    /* +4: rbp in rbx */
	.cfi_def_cfa %rsp, 8
	.cfi_register %rbp, %rbx
	nop                    /* +5: rbp saved too far from the CFA for an s8 count of words */
	.cfi_offset %rbp, -2048
	nop                    /* +6: the return address saved at CFA-16 */
	.cfi_restore %rbp
	.cfi_offset %rip, -16
	nop                    /* +7: rbp at CFA-1024, the farthest an s8 count of words reaches */
	.cfi_offset %rip, -8
	.cfi_offset %rbp, -1024
	ret                    /* +8 */
	.cfi_endproc
	.size cfi_unsupported, .-cfi_unsupported

/* A signal trampoline's FDE (augmentation "zRS"): unsupported whatever its rules. */
FUNC cfi_signal
	.cfi_startproc
	.cfi_signal_frame
	nop                    /* +1 */
	ret                    /* +2 */
	.cfi_endproc
	.size cfi_signal, .-cfi_signal

	.section .note.GNU-stack, "", @progbits
