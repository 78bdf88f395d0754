package giraffe.curator;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Apache Curator's framework and recipes against running Giraffe servers:
 * every check runs with clients (sessions) of its own under a znode of its
 * own and asserts what the recipe promises; the run prints one line per
 * check and a closing "N passed, N failed" line, and exits non-zero if any
 * check failed.
 *
 * <p>Usage: Main NAME SERVERS [CLUSTER_DIR GIRAFFE_BIN] [CHECK...], where
 * SERVERS is the comma-separated client addresses; with CLUSTER_DIR (a
 * `giraffe cluster` directory) and the giraffe binary the servers are an
 * ensemble and the ensemble's checks run too. CHECK names limit the run.
 */
public final class Main {
    /** How long one check may take before it counts as failed. */
    private static final long CHECK_TIMEOUT_S = 60;

    private Main() {}

    public static void main(String[] args) throws Exception {
        String name = args[0];
        List<String> servers = Arrays.asList(args[1].split(","));
        boolean ensemble = args.length > 2 && !args[2].equals("-");
        Env env = new Env(servers, ensemble, ensemble ? args[2] : null, ensemble ? args[3] : null);
        List<String> only = args.length > 4 ? Arrays.asList(args).subList(4, args.length) : List.of();

        List<Check> checks = new ArrayList<>();
        checks.addAll(LockChecks.all());
        checks.addAll(ElectionChecks.all());
        checks.addAll(CoordinationChecks.all());
        checks.addAll(NodeChecks.all());
        if (ensemble) {
            checks.addAll(EnsembleChecks.all());
        }
        int passed = 0, failed = 0;
        for (Check c : checks) {
            if (!only.isEmpty() && !only.contains(c.name())) {
                continue;
            }
            long start = System.nanoTime();
            String err = run(env, c);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            if (err == null) {
                passed++;
                System.out.printf("ok   %-40s %6d ms%n", c.name(), ms);
            } else {
                failed++;
                System.out.printf("FAIL %-40s %6d ms: %s%n", c.name(), ms, err);
            }
            System.out.flush();
        }
        System.out.printf("curator-%s: %d passed, %d failed%n", name, passed, failed);
        System.out.flush();
        // Recipes' and clients' threads of a failed check may still run.
        System.exit(failed == 0 ? 0 : 1);
    }

    /** Runs one check under its timeout; returns why it failed, or null. */
    private static String run(Env env, Check c) {
        Future<Void> f = Check.spawn(() -> {
            c.body().run(env, "/" + c.name());
            return null;
        });
        try {
            f.get(CHECK_TIMEOUT_S, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException e) {
            Throwable t = e.getCause();
            if (t instanceof AssertionError) {
                return t.getMessage();
            }
            StringWriter w = new StringWriter();
            t.printStackTrace(new PrintWriter(w));
            return w.toString();
        } catch (TimeoutException e) {
            f.cancel(true);
            return "did not finish within " + CHECK_TIMEOUT_S + " s";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        } finally {
            env.closeAll();
        }
    }
}
