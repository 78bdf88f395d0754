package giraffe.curator;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** A named check: a body run against an Env, under a znode of its own. */
record Check(String name, Body body) {
    /** What a check does; it throws (an AssertionError or the client's exception) to fail. */
    @FunctionalInterface
    interface Body {
        void run(Env env, String root) throws Exception;
    }

    /** One of n parallel workers. */
    @FunctionalInterface
    interface Worker {
        void run(int i) throws Exception;
    }

    /**
     * Runs n workers on threads of their own and waits up to timeoutMs for
     * all; the first worker's failure fails the caller.
     */
    static void parallel(int n, long timeoutMs, Worker w) throws Exception {
        ExecutorService ex = Executors.newFixedThreadPool(n);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int id = i;
                fs.add(ex.submit(() -> {
                    w.run(id);
                    return null;
                }));
            }
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
            for (Future<?> f : fs) {
                try {
                    f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Exception x) {
                        throw x;
                    }
                    throw (Error) e.getCause();
                } catch (TimeoutException e) {
                    throw new AssertionError("workers did not finish within " + timeoutMs + " ms");
                }
            }
        } finally {
            ex.shutdownNow();
        }
    }

    /** Runs c on a daemon thread of its own (a client waiting while the check goes on). */
    static <T> Future<T> spawn(Callable<T> c) {
        FutureTask<T> t = new FutureTask<>(c);
        Thread th = new Thread(t, "spawned");
        th.setDaemon(true);
        th.start();
        return t;
    }
}
