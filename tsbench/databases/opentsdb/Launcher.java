// The single-file launcher of tsbench's local OpenTSDB (phases 2-5: the server tsbench
// runs for target opentsdb): HBase standalone and OpenTSDB in one JVM, so tsbench's
// server lifecycle (one pid) applies unchanged. Java 17 runs it straight from source,
// with HBase's jars as the class path:
//
//   java -cp "<hbase lib>/*" Launcher.java <opentsdb lib dir> <opentsdb config> <control port> key=value...
//
// ZooKeeper, one HBase master and one region server start in-process with the key=value
// settings (ports, root dir, ...); OpenTSDB's four tables are created through the Admin
// API when missing; then OpenTSDB's TSDMain runs in a class loader of its own over its lib
// dir's jars, parent the platform loader (its Guava 18, Netty 3, ZooKeeper 3.4 and Jackson
// 2.9 would clash with HBase's). A control endpoint on 127.0.0.1:<control port> answers
// POST /compact: a flush and a major compaction of the four tables, waited for, then the
// files compacted away and the flushed WAL deleted at once (HBase keeps them for minutes),
// so that the root dir's bytes are the tables' own. SIGTERM stops OpenTSDB, then HBase
// (the master's cluster shutdown), bounded, then halts the JVM: a signal handler rather
// than a shutdown hook, as HBase's and OpenTSDB's own hooks would race each other.

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.LocalHBaseCluster;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.io.encoding.DataBlockEncoding;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HStore;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import sun.misc.Signal;

public class Launcher {
    // OpenTSDB's tables and their column families, as its create_table.sh makes them (DIFF block
    // encoding; ROW bloom filters, HBase's default) with COMPRESSION=NONE, as in its quick start
    static final String[][] TABLES = {{"tsdb", "t"}, {"tsdb-uid", "id", "name"}, {"tsdb-tree", "t"},
                                      {"tsdb-meta", "name"}};
    static final long STOP_BOUND_MS = 75_000;      // then the JVM halts as it is (tsbench kills at 90 s)
    static final long TSD_STOP_MS = 20_000;
    static final long COMPACT_BOUND_S = 300;

    static final AtomicBoolean stopping = new AtomicBoolean();
    static volatile boolean up;
    static MiniZooKeeperCluster zk;
    static LocalHBaseCluster hbase;
    static Connection connection;
    static HttpServer control;
    static ClassLoader tsdLoader;

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: Launcher <opentsdb lib dir> <opentsdb config> <control port> key=value...");
            System.exit(2);
        }
        Configuration conf = HBaseConfiguration.create();
        for (int i = 3; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                System.err.println("launcher: not key=value: " + args[i]);
                System.exit(2);
            }
            conf.set(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        Signal.handle(new Signal("TERM"), s -> stop());
        Signal.handle(new Signal("INT"), s -> stop());
        String step = "HBase";
        try {
            startHBase(conf);
            step = "OpenTSDB's tables";
            connection = ConnectionFactory.createConnection(conf);
            Admin admin = connection.getAdmin();
            createTables(admin);
            step = "the control endpoint on 127.0.0.1:" + args[2];
            control = startControl(Integer.parseInt(args[2]), admin);
            step = "OpenTSDB";
            startOpenTsdb(new File(args[0]), args[1]);
        } catch (Throwable e) {
            fail(step + " did not start", e);
        }
        up = true;
        say("HBase and OpenTSDB are up");
        hbase.join();
        if (!stopping.get()) {
            fail("HBase stopped on its own", null);
        }
        new CountDownLatch(1).await();     // stop() halts the JVM
    }

    static void startHBase(Configuration conf) throws Exception {
        DefaultMetricsSystem.setMiniClusterMode(true);   // master and region server share the JVM's metrics
        int port = conf.getInt("hbase.zookeeper.property.clientPort", 0);
        zk = new MiniZooKeeperCluster(conf);
        zk.addClientPort(port);
        if (zk.startup(new File(conf.get("hbase.zookeeper.property.dataDir"))) != port) {
            throw new IOException("ZooKeeper could not listen on 127.0.0.1:" + port + " (in use?)");
        }
        hbase = new LocalHBaseCluster(conf, 1, 1);
        hbase.startup();
    }

    static void createTables(Admin admin) throws IOException {
        for (String[] t : TABLES) {
            TableName name = TableName.valueOf(t[0]);
            if (admin.tableExists(name)) {
                continue;
            }
            TableDescriptorBuilder table = TableDescriptorBuilder.newBuilder(name);
            for (int i = 1; i < t.length; i++) {
                table.setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(Bytes.toBytes(t[i]))
                        .setDataBlockEncoding(DataBlockEncoding.DIFF).build());
            }
            admin.createTable(table.build());
            say("created table " + t[0]);
        }
    }

    static void startOpenTsdb(File lib, String config) throws Exception {
        File[] jars = lib.listFiles((dir, name) -> name.endsWith(".jar"));
        if (jars == null || jars.length == 0) {
            throw new IOException("no jar in " + lib);
        }
        URL[] urls = new URL[jars.length];
        for (int i = 0; i < jars.length; i++) {
            urls[i] = jars[i].toURI().toURL();
        }
        tsdLoader = new URLClassLoader(urls, ClassLoader.getPlatformClassLoader());
        Thread.currentThread().setContextClassLoader(tsdLoader);
        Method main = Class.forName("net.opentsdb.tools.TSDMain", true, tsdLoader).getMethod("main", String[].class);
        main.setAccessible(true);                        // TSDMain is package-private
        main.invoke(null, (Object) new String[] {"--config=" + config});
    }

    // ---- control: POST /compact ----------------------------------------------------------------
    static HttpServer startControl(int port, Admin admin) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
        server.createContext("/compact", ex -> answer(ex, admin));
        server.start();
        return server;
    }

    static void answer(HttpExchange ex, Admin admin) throws IOException {
        int status = 200;
        String body;
        if (!"POST".equals(ex.getRequestMethod())) {
            status = 405;
            body = "POST only\n";
        } else {
            try {
                body = compact(admin);
            } catch (Exception e) {
                status = 500;
                body = describe(e) + "\n";
            }
        }
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", status == 200 ? "application/json" : "text/plain");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    static String compact(Admin admin) throws Exception {
        long t0 = System.nanoTime();
        long deadline = t0 + COMPACT_BOUND_S * 1_000_000_000L;
        List<String> names = new ArrayList<>();
        for (ServerName rs : admin.getRegionServers()) {
            admin.flushRegionServer(rs);  // every memstore to a file (a table's flush procedure can time
        }                                 // out on a busy machine: "procedure N is still running")
        for (String[] t : TABLES) {
            admin.majorCompact(TableName.valueOf(t[0]));
            names.add("\"" + t[0] + "\"");
        }
        for (String[] t : TABLES) {
            while (admin.getCompactionState(TableName.valueOf(t[0])) != CompactionState.NONE) {
                if (System.nanoTime() > deadline) {
                    throw new IOException("the major compaction of " + t[0] + " did not end within "
                                          + COMPACT_BOUND_S + " s");
                }
                Thread.sleep(200);
            }
        }
        for (HRegion region : hbase.getRegionServer(0).getRegions()) {
            for (HStore store : region.getStores()) {
                store.closeAndArchiveCompactedFiles();   // as HBase's discharger chore does every 2 min
            }
        }
        for (ServerName rs : admin.getRegionServers()) {
            admin.flushRegionServer(rs);  // hbase:meta too: nothing left unflushed in the WAL,
            admin.rollWALWriter(rs);      // which then goes to oldWALs
        }
        admin.runCleanerChore();          // the archived files and old WALs go (their TTLs are 0)
        return String.format("{\"tables\": [%s], \"seconds\": %.3f}%n", String.join(", ", names),
                             (System.nanoTime() - t0) / 1e9);
    }

    // ---- stop ----------------------------------------------------------------------------------
    static void stop() {
        if (!stopping.compareAndSet(false, true)) {
            return;
        }
        if (!up) {
            say("stopped while starting");
            Runtime.getRuntime().halt(143);
        }
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(STOP_BOUND_MS);
            } catch (InterruptedException e) {
                return;
            }
            say("the stop took over " + STOP_BOUND_MS / 1000 + " s: halting");
            Runtime.getRuntime().halt(1);
        });
        watchdog.setDaemon(true);
        watchdog.start();
        try {
            stopOpenTsdb();
            control.stop(0);
            connection.close();
            hbase.shutdown();
            hbase.join();
            zk.shutdown();
        } catch (Throwable e) {
            fail("stop", e);
        }
        say("stopped");
        Runtime.getRuntime().halt(0);
    }

    static void stopOpenTsdb() throws Exception {
        // OpenTSDB's own shutdown hook (RPC plugins, then a flush and close of its HBase client),
        // run here first: the JVM halts, so no shutdown hook runs
        Constructor<?> hook = Class.forName("net.opentsdb.tools.TSDMain$1TSDBShutdown", true, tsdLoader)
                .getDeclaredConstructor();
        hook.setAccessible(true);
        Thread t = (Thread) hook.newInstance();
        t.start();
        t.join(TSD_STOP_MS);
        say(t.isAlive() ? "OpenTSDB did not stop within " + TSD_STOP_MS / 1000 + " s" : "OpenTSDB stopped");
    }

    // ---- messages ------------------------------------------------------------------------------
    static void say(String msg) {
        System.out.println("launcher: " + msg);
    }

    static void fail(String what, Throwable e) {
        if (e != null) {
            e.printStackTrace();
        }
        say(e == null ? what : what + ": " + describe(e));
        Runtime.getRuntime().halt(1);
    }

    /** The messages of an exception and its causes, in one line. */
    static String describe(Throwable e) {
        StringBuilder out = new StringBuilder();
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof InvocationTargetException) {
                continue;
            }
            String msg = c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
            if (out.indexOf(msg) < 0) {
                out.append(out.length() == 0 ? "" : ": ").append(msg);
            }
        }
        return out.toString();
    }
}
