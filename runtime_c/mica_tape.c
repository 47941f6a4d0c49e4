/* mica_tape.c: windows, the arena, nodes, tags, and the Backward walk.
 *
 * One window at a time: mica_tape_begin starts epoch e+1 and empties the
 * arena (keeping its chunks, so steady-state training allocates nothing),
 * which also forgets the previous window's nodes and gradients. A tag whose
 * epoch is not the current one is stale: reading it enrolls a fresh leaf.
 * Backward walks the nodes in reverse creation order, so gradients accumulate
 * in one fixed order on every machine. Once a node's backward has run its
 * gradient is dead (every contribution to it came from later nodes), unless a
 * place's Gradient answers with it: the buffer goes on a spare list and a
 * later gradient of the same size takes it, so a window holds the gradients
 * alive at one time, not all of them.
 */
#include "mica.h"

#include <stdlib.h>
#include <string.h>

typedef struct chunk {
    struct chunk *next;
    size_t size, used;
} chunk;

#define ALIGN 64
#define HEADER ((sizeof(chunk) + ALIGN - 1) / ALIGN * ALIGN)
#define FIRST_CHUNK ((size_t)1 << 20)

#define SPARE_SIZES 64

static struct {
    uint64_t epoch;          /* the current window, or the last one */
    uint64_t backward_epoch; /* the window Backward last walked */
    bool open;
    chunk *first, *current;
    mica_node **nodes;
    int64_t count, capacity;
    struct {
        size_t bytes;
        void *head; /* buffers of this size, each holding the next one's address */
    } spare[SPARE_SIZES];
    int spare_sizes;
} tape;

size_t mica_dtype_size(int dtype) {
    return dtype == MICA_F64 ? sizeof(double) : sizeof(float);
}

void (*mica_tape_device_reset)(void);
void *(*mica_tape_device_zeros)(int64_t bytes, int line);

void mica_tape_begin(int line) {
    if (tape.open) mica_trap(line, "a tape window cannot open inside another tape window");
    if (mica_tape_device_reset) mica_tape_device_reset(); /* the last window's device buffers go back */
    tape.epoch++;
    tape.open = true;
    tape.count = 0;
    tape.spare_sizes = 0;
    for (chunk *c = tape.first; c != NULL; c = c->next) c->used = 0;
    tape.current = tape.first;
}

void mica_tape_end(void) {
    tape.open = false;
}

/* Not zeroed (the arena never promises zeros), so a chunk's pages become
 * resident only as windows reach them: calloc writes every byte. */
static chunk *new_chunk(size_t size) {
    chunk *c = malloc(HEADER + size);
    if (c == NULL) mica_trapf(0, "out of memory allocating %zu bytes for the tape", HEADER + size);
    c->next = NULL;
    c->used = 0;
    c->size = size;
    return c;
}

void *mica_tape_alloc(size_t bytes) {
    bytes = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    if (tape.first == NULL) tape.first = tape.current = new_chunk(bytes > FIRST_CHUNK ? bytes : FIRST_CHUNK);
    while (tape.current->used + bytes > tape.current->size) {
        chunk *next = tape.current->next;
        if (next == NULL || next->size < bytes) {
            /* a chunk too small for this request is kept for later windows' smaller ones */
            size_t size = tape.current->size * 2 > bytes ? tape.current->size * 2 : bytes;
            chunk *fresh = new_chunk(size);
            fresh->next = next;
            tape.current->next = fresh;
            next = fresh;
        }
        tape.current = next;
    }
    void *p = (char *)tape.current + HEADER + tape.current->used;
    tape.current->used += bytes;
    return p;
}

static void remember(mica_node *n) {
    if (tape.count == tape.capacity) {
        int64_t capacity = tape.capacity ? tape.capacity * 2 : 1024;
        tape.nodes = mica_resize(tape.nodes, tape.count, capacity, sizeof(mica_node *), 0);
        tape.capacity = capacity;
    }
    tape.nodes[tape.count++] = n;
}

static mica_node *make(int dtype, int rank, const int64_t *dims, const char *op, mica_backward_fn backward,
                       mica_node *a, mica_node *b, mica_node *c, bool on_device) {
    mica_node *n = mica_tape_alloc(sizeof(mica_node));
    memset(n, 0, sizeof *n);
    n->op = op;
    n->dtype = dtype;
    n->rank = rank;
    n->count = 1;
    for (int i = 0; i < rank; i++) {
        n->dims[i] = dims[i];
        n->count *= dims[i];
    }
    n->on_device = on_device;
    n->value = on_device ? NULL : mica_tape_alloc((size_t)n->count * mica_dtype_size(dtype));
    n->in[0] = a;
    n->in[1] = b;
    n->in[2] = c;
    n->needs_grad = (a && a->needs_grad) || (b && b->needs_grad) || (c && c->needs_grad);
    n->backward = n->needs_grad ? backward : NULL;
    remember(n);
    return n;
}

mica_node *mica_node_new(int dtype, int rank, const int64_t *dims, const char *op, mica_backward_fn backward,
                         mica_node *a, mica_node *b, mica_node *c) {
    return make(dtype, rank, dims, op, backward, a, b, c, false);
}

mica_node *mica_node_new_on_device(int dtype, int rank, const int64_t *dims, const char *op, mica_backward_fn backward,
                                   mica_node *a, mica_node *b, mica_node *c) {
    return make(dtype, rank, dims, op, backward, a, b, c, true);
}

bool mica_tape_current(const mica_tag *tag) {
    return tag->epoch == tape.epoch && tag->node != NULL;
}

void mica_tape_enroll(mica_tag *tag, mica_node *n) {
    tag->node = n;
    tag->epoch = tape.epoch;
}

void mica_tape_note_read(mica_tag *tag) {
    if (tag->read_epoch != tape.epoch) {
        tag->read = tag->node;
        tag->read_epoch = tape.epoch;
        tag->node->answers = true;
    }
}

static size_t grad_bytes(const mica_node *n) {
    return (size_t)n->count * mica_dtype_size(n->dtype);
}

// A spare buffer of exactly `bytes`, or fresh arena memory; not zeroed.
static void *grad_buffer(size_t bytes) {
    for (int i = 0; i < tape.spare_sizes; i++)
        if (tape.spare[i].bytes == bytes && tape.spare[i].head != NULL) {
            void *p = tape.spare[i].head;
            memcpy(&tape.spare[i].head, p, sizeof(void *));
            return p;
        }
    return mica_tape_alloc(bytes);
}

// A dead gradient for grad_buffer to hand out again (past SPARE_SIZES sizes, it stays unused).
static void spare(void *p, size_t bytes) {
    if (bytes < sizeof(void *)) return;
    int i = 0;
    while (i < tape.spare_sizes && tape.spare[i].bytes != bytes) i++;
    if (i == SPARE_SIZES) return;
    if (i == tape.spare_sizes) {
        tape.spare[i].bytes = bytes;
        tape.spare[i].head = NULL;
        tape.spare_sizes++;
    }
    memcpy(p, &tape.spare[i].head, sizeof(void *));
    tape.spare[i].head = p;
}

void *mica_node_grad(mica_node *n) {
    if (n->grad == NULL && n->on_device) {
        n->grad = mica_tape_device_zeros((int64_t)n->count * (int64_t)mica_dtype_size(n->dtype), n->line);
    } else if (n->grad == NULL) {
        n->grad = grad_buffer(grad_bytes(n));
        memset(n->grad, 0, grad_bytes(n));
    }
    return n->grad;
}

void *mica_node_grad_fresh(mica_node *n, bool *fresh) {
    *fresh = n->grad == NULL && !n->on_device;
    if (*fresh) n->grad = grad_buffer(grad_bytes(n));
    return *fresh ? n->grad : mica_node_grad(n);
}

mica_node *mica_tape_read(mica_tag *tag, int dtype, const void *value, int rank, const int64_t *dims) {
    if (!mica_tape_current(tag)) {
        mica_node *n = mica_node_new(dtype, rank, dims, "leaf", NULL, NULL, NULL, NULL);
        memcpy(n->value, value, (size_t)n->count * mica_dtype_size(dtype));
        n->needs_grad = true;
        mica_tape_enroll(tag, n);
    }
    mica_tape_note_read(tag);
    return tag->node;
}

mica_node *mica_tape_const(int dtype, const void *value, int rank, const int64_t *dims) {
    mica_node *n = mica_node_new(dtype, rank, dims, "constant", NULL, NULL, NULL, NULL);
    memcpy(n->value, value, (size_t)n->count * mica_dtype_size(dtype));
    return n;
}

mica_node *mica_tape_scalar(int dtype, double value) {
    mica_node *n = mica_node_new(dtype, 0, NULL, "constant", NULL, NULL, NULL, NULL);
    if (dtype == MICA_F64)
        *(double *)n->value = value;
    else
        *(float *)n->value = (float)value;
    return n;
}

void mica_tape_write(mica_tag *tag, void *place_value, mica_node *n) {
    memcpy(place_value, n->value, (size_t)n->count * mica_dtype_size(n->dtype));
    mica_tape_enroll(tag, n);
}

void mica_tape_value(void *out, const mica_node *n) {
    memcpy(out, n->value, (size_t)n->count * mica_dtype_size(n->dtype));
}

void mica_tag_adopt(mica_tag *tag) {
    tag->node = NULL;
    tag->epoch = 0;
}

static int64_t position(const mica_node *n) {
    for (int64_t i = tape.count - 1; i >= 0; i--)
        if (tape.nodes[i] == n) return i;
    return -1;
}

mica_node *mica_tape_loss(mica_tag *loss, const char *name, int line) {
    if (tape.open) mica_trapf(line, "Backward(%s) inside its tape window; call it after 'end'", name);
    if (loss->epoch != tape.epoch || loss->node == NULL)
        mica_trapf(line, "Backward(%s): the last tape window did not compute '%s'", name, name);
    if (tape.backward_epoch == tape.epoch)
        mica_trapf(line, "Backward(%s): this window's gradients were already computed", name);
    tape.backward_epoch = tape.epoch;
    return loss->node;
}

void mica_tape_walk(mica_node *root) {
    for (int64_t i = position(root); i >= 0; i--) {
        mica_node *n = tape.nodes[i];
        if (n->grad != NULL && n->backward != NULL) {
            n->backward(n);
            if (!n->answers && !n->on_device) {
                spare(n->grad, grad_bytes(n));
                n->grad = NULL;
            }
        }
    }
}

/* Backward(l), or Backward(v[i]) from one element of a tracked tensor (element i, row-major). */
void mica_tape_backward(mica_tag *loss, int64_t element, const char *name, int line) {
    mica_node *root = mica_tape_loss(loss, name, line);
    if (root->dtype == MICA_F64)
        ((double *)mica_node_grad(root))[element] = 1.0;
    else
        ((float *)mica_node_grad(root))[element] = 1.0f;
    mica_tape_walk(root);
}

mica_node *mica_tape_gradient_node(mica_tag *tag, const char *name, int line) {
    if (tape.open || tape.backward_epoch != tape.epoch || tape.epoch == 0)
        mica_trapf(line, "Gradient(%s) before Backward of the last tape window", name);
    if (tag->read_epoch == tape.epoch && tag->read != NULL && tag->read->grad != NULL) return tag->read;
    return NULL; /* the window never read the place, or no path led back to it */
}

void mica_tape_gradient(void *out, mica_tag *tag, int dtype, int64_t count, const char *name, int line) {
    mica_node *read = mica_tape_gradient_node(tag, name, line);
    size_t bytes = (size_t)count * mica_dtype_size(dtype);
    if (read != NULL)
        memcpy(out, read->grad, bytes);
    else
        memset(out, 0, bytes);
}
