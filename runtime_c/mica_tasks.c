/* mica_tasks.c: tasks on OS threads, the channels between them, and deadlock.
 *
 * One lock, `tasks`, guards every block and channel; tasks spend their time
 * computing, not here. `running` counts the program's threads that are not
 * waiting, on a channel or for their block's tasks. A thread that waits takes
 * itself off; whoever releases it (a Send, a Receive, a CloseChannel, a block's
 * last task ending) puts it back before it wakes, so the count never drops to
 * zero while a release is on its way. When a thread would make it zero, no
 * thread is left to release any other: the program traps as a deadlock, naming
 * the line of the channel operation that waited last.
 *
 * Each task runs on its own 1 GiB stack, like the program thread, with its own
 * line, stack floor, random generator (mica_random.c) and output line
 * (mica_print.c). The kernels' thread pool serves one caller at a time; a task
 * that finds it busy runs its kernel serially, with the same bits.
 */
#include "mica.h"

#include <pthread.h>
#include <string.h>

static pthread_mutex_t tasks = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t a_block_ended = PTHREAD_COND_INITIALIZER;
static int running = 1; /* the program thread */
static int live_tasks;
static int last_wait_line;

/* A thread waiting on a channel: released by whoever changes what it waits for. */
typedef struct waiter {
    struct waiter *next;
    bool released;
} waiter;

struct mica_channel {
    size_t value_bytes;
    int64_t capacity, count, head; /* the values are slots head .. head + count - 1, mod capacity */
    bool closed;
    pthread_cond_t changed;
    waiter *senders, *receivers;
    unsigned char *slots;
};

typedef struct {
    void (*run)(void *args);
    void *args;
    mica_tasks *block;
    mica_random_state random;
    int line;
} task;

static _Noreturn void deadlock(void) {
    mica_trap(last_wait_line, "deadlock: every task waits on a channel that no running task will serve");
}

/* Called with the lock held, by a thread about to wait. */
static void stop_running(void) {
    if (--running == 0) deadlock();
}

static void release(waiter **list) {
    for (waiter *w = *list; w != NULL; w = w->next) {
        w->released = true;
        running++;
    }
    *list = NULL;
}

static void wait_on(mica_channel *channel, waiter **list, int line) {
    waiter me = {*list, false};
    *list = &me;
    last_wait_line = line;
    stop_running();
    while (!me.released) pthread_cond_wait(&channel->changed, &tasks);
}

static void *run_task(void *p) {
    task t = *(task *)p;
    mica_free(p);
    mica_line = t.line;
    mica_watch_the_stack();
    mica_output_by_lines();
    mica_random_adopt(t.random);
    t.run(t.args);
    mica_free(t.args);
    mica_flush();
    pthread_mutex_lock(&tasks);
    live_tasks--;
    running--;
    if (--t.block->alive == 0 && t.block->joining) {
        running++; /* its spawner goes on */
        pthread_cond_broadcast(&a_block_ended);
    } else if (running == 0) {
        deadlock();
    }
    pthread_mutex_unlock(&tasks);
    return NULL;
}

void mica_spawn(mica_tasks *block, void (*run)(void *args), void *args, int line) {
    task *t = mica_alloc(sizeof *t, line);
    pthread_mutex_lock(&tasks);
    if (live_tasks == MICA_MAX_TASKS)
        mica_trapf(line, "too many tasks: at most %d run at once", MICA_MAX_TASKS);
    *t = (task){run, args, block, mica_random_fork(block->started), line};
    block->started++;
    block->alive++;
    live_tasks++;
    running++;
    if (!mica_start_thread(run_task, t)) mica_trap(line, "cannot start a task: the system has no thread to give");
    pthread_mutex_unlock(&tasks);
}

void mica_tasks_end(mica_tasks *block) { /* a deadlock here names the channel operation that waited last */
    pthread_mutex_lock(&tasks);
    if (block->alive > 0) {
        block->joining = true;
        stop_running();
        while (block->alive > 0) pthread_cond_wait(&a_block_ended, &tasks);
        block->joining = false;
    }
    pthread_mutex_unlock(&tasks);
}

void mica_channel_new(mica_channel **channel, size_t value_bytes, int64_t capacity, int line) {
    if (capacity < 1) mica_trapf(line, "a channel holds at least 1 value, not %lld", (long long)capacity);
    mica_channel *c = mica_alloc(sizeof *c, line);
    c->value_bytes = value_bytes;
    c->capacity = capacity;
    c->slots = mica_alloc_elements(capacity, value_bytes, line);
    pthread_cond_init(&c->changed, NULL);
    *channel = c; /* the one it replaces lives on: other copies of its handle may still use it */
}

static mica_channel *made(mica_channel *channel, int line) {
    if (channel == NULL) mica_trap(line, "this channel was never made: call NewChannel first");
    return channel;
}

void mica_channel_send(mica_channel *channel, const void *value, int line) {
    mica_channel *c = made(channel, line);
    pthread_mutex_lock(&tasks);
    while (c->count == c->capacity && !c->closed) wait_on(c, &c->senders, line);
    if (c->closed) mica_trap(line, "Send on a closed channel");
    memcpy(c->slots + (size_t)((c->head + c->count) % c->capacity) * c->value_bytes, value, c->value_bytes);
    c->count++;
    release(&c->receivers);
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&tasks);
}

bool mica_channel_receive(mica_channel *channel, void *value, int line) {
    mica_channel *c = made(channel, line);
    pthread_mutex_lock(&tasks);
    while (c->count == 0 && !c->closed) wait_on(c, &c->receivers, line);
    bool got = c->count > 0;
    if (got) {
        memcpy(value, c->slots + (size_t)c->head * c->value_bytes, c->value_bytes);
        c->head = (c->head + 1) % c->capacity;
        c->count--;
        release(&c->senders);
        pthread_cond_broadcast(&c->changed);
    }
    pthread_mutex_unlock(&tasks);
    return got;
}

void mica_channel_close(mica_channel *channel, int line) {
    mica_channel *c = made(channel, line);
    pthread_mutex_lock(&tasks);
    if (c->closed) mica_trap(line, "CloseChannel of a channel already closed");
    c->closed = true;
    release(&c->senders);
    release(&c->receivers);
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&tasks);
}
