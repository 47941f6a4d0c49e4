/* mica_tape.h: the autograd tape behind `tape ... end`, Backward and Gradient.
 *
 * Inside a window every operation on tracked values makes a node: its value,
 * its inputs, and the function that sends its gradient back to them. Nodes,
 * values and gradients live in one arena that the next window reuses, so a
 * training loop runs in constant memory.
 *
 * A tracked place holds its plain value beside a tag: the node that made the
 * value in the current window (if any), and the node the window first read,
 * which is what Gradient(place) answers for.
 */
#ifndef MICA_TAPE_H
#define MICA_TAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MICA_MAX_RANK 6

enum { MICA_F32 = 0, MICA_F64 = 1 };

typedef struct mica_node mica_node;
typedef void (*mica_backward_fn)(mica_node *out);

struct mica_node {
    mica_backward_fn backward; /* NULL when no input needs a gradient */
    const char *op;
    int dtype; /* MICA_F32 or MICA_F64 */
    int rank;
    int64_t dims[MICA_MAX_RANK];
    int64_t count;
    void *value;
    void *grad; /* zeroed on first use, during Backward */
    mica_node *in[3];
    bool needs_grad;
    bool on_device;    /* value and grad are device addresses (mica_gpu_tape.c) */
    bool answers;      /* a place's first read this window: Gradient(place) reads grad */
    int line;          /* where a device node's kernels report their faults */
    double param;      /* a scalar the backward needs (a scale, an epsilon) */
    int64_t extent[4]; /* extents the backward needs */
    void *saved;       /* what the forward keeps for the backward */
};

typedef struct {
    mica_node *node;     /* made the place's value in window `epoch` */
    uint64_t epoch;
    mica_node *read;     /* the value the window first read */
    uint64_t read_epoch;
} mica_tag;

void mica_tape_begin(int line);
void mica_tape_end(void);

/* Arena memory for the current window (64-byte aligned, not zeroed). */
void *mica_tape_alloc(size_t bytes);
size_t mica_dtype_size(int dtype);

/* A new node of the given shape with room for its value; the op's inputs are
 * recorded, and it needs a gradient when any input does. */
mica_node *mica_node_new(int dtype, int rank, const int64_t *dims, const char *op, mica_backward_fn backward,
                         mica_node *a, mica_node *b, mica_node *c);
void *mica_node_grad(mica_node *n); /* the gradient buffer, zeroed on first use */
/* The gradient buffer for a backward that contributes to every element of it.
 * On the first contribution it comes back unzeroed with *fresh set, and the
 * caller stores 0 + v where it would add v: the same bits as adding v to the
 * zeroed buffer (0 + v turns -0 into +0 as that does), one pass fewer. */
void *mica_node_grad_fresh(mica_node *n, bool *fresh);
/* A node whose value the device tape stores (value and grad become device addresses). */
mica_node *mica_node_new_on_device(int dtype, int rank, const int64_t *dims, const char *op, mica_backward_fn backward,
                                   mica_node *a, mica_node *b, mica_node *c);
bool mica_tape_current(const mica_tag *tag);      /* the tag names a node of this window */
void mica_tape_enroll(mica_tag *tag, mica_node *n); /* the place's value now comes from n */
void mica_tape_note_read(mica_tag *tag);          /* the first read is the one Gradient answers for */

/* Reading a tracked place enrolls it as a leaf the first time a window reads it. */
mica_node *mica_tape_read(mica_tag *tag, int dtype, const void *value, int rank, const int64_t *dims);
/* A plain value used by a recorded operation: copied, needs no gradient. */
mica_node *mica_tape_const(int dtype, const void *value, int rank, const int64_t *dims);
mica_node *mica_tape_scalar(int dtype, double value);
/* Store a node's value into a tracked place and remember the node. */
void mica_tape_write(mica_tag *tag, void *place_value, mica_node *n);
/* Copy a node's value into plain storage. */
void mica_tape_value(void *out, const mica_node *n);
/* A plain value assigned to a tracked place: the next window enrolls it afresh. */
void mica_tag_adopt(mica_tag *tag);

void mica_tape_backward(mica_tag *loss, int64_t element, const char *name, int line);
void mica_tape_gradient(void *out, mica_tag *tag, int dtype, int64_t count, const char *name, int line);

/* The pieces the device tape (mica_gpu_tape.c) shares with the host tape. */
mica_node *mica_tape_loss(mica_tag *loss, const char *name, int line); /* checked, marked walked */
void mica_tape_walk(mica_node *root);                                    /* its backward, from root down */
mica_node *mica_tape_gradient_node(mica_tag *tag, const char *name, int line); /* NULL: zeros */
/* Set by the device tape when a program records on the GPU; CPU programs leave them NULL. */
extern void (*mica_tape_device_reset)(void);
extern void *(*mica_tape_device_zeros)(int64_t bytes, int line);

#endif /* MICA_TAPE_H */
