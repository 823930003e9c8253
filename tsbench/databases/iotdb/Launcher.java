// The single-file launcher of tsbench's local IoTDB (phases 2-5: the server tsbench runs
// for target iotdb): IoTDB's ConfigNode and DataNode in ONE JVM, each in a class loader of
// its own, so tsbench's server lifecycle (one pid: watched, SIGTERM, SIGKILL) applies
// unchanged and no node can outlive the other. Java 17 runs it straight from source:
//
//   java -DIOTDB_CONF=<dir> -DCONFIGNODE_CONF=<dir> ... Launcher.java <iotdb lib dir> <cn port> <dn rpc port>
//
// Both nodes read the one iotdb-system.properties of the conf dir (ports, dirs). IoTDB keeps
// its configuration, services and metrics in static singletons, some of them in classes both
// nodes share (node-commons): two class loaders over the same jars, parent the platform
// loader, give each node its own copies. The ConfigNode starts first; the DataNode once the
// ConfigNode's internal port accepts connections (bounded). Either node failing to start,
// or its main thread dying with an error, ends the JVM with status 1: a half-started server
// is never left running. SIGTERM runs both nodes' own shutdown hooks (the JVM's default);
// once the DataNode's has ended (its data flushed and closed), the JVM halts rather than
// wait about 5 s for the ConfigNode's procedure executor to wind down: the ConfigNode
// (SimpleConsensus, one node) has written each change of its state as it was made.

import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;

public class Launcher {
    static final long CONFIGNODE_WAIT_MS = 90_000;
    static final long DATANODE_STOP_MS = 50_000;     // its hook's bound (tsbench kills at 60 s)

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: Launcher <iotdb lib dir> <confignode internal port> <datanode rpc port>");
            System.exit(2);
        }
        URL[] jars = jars(new File(args[0]));
        int cnPort = Integer.parseInt(args[1]);
        run("confignode", jars, "org.apache.iotdb.confignode.service.ConfigNode");
        long deadline = System.currentTimeMillis() + CONFIGNODE_WAIT_MS;
        while (!accepts(cnPort)) {
            if (System.currentTimeMillis() > deadline) {
                die("the ConfigNode did not open port " + cnPort + " within " + CONFIGNODE_WAIT_MS / 1000 + " s", null);
            }
            Thread.sleep(100);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(Launcher::afterDataNode, "launcher-stop"));
        run("datanode", jars, "org.apache.iotdb.db.service.DataNode");
    }

    /** In the JVM's shutdown: wait for the DataNode's own hook, then halt. */
    static void afterDataNode() {
        try {
            Thread hook = null;
            for (int i = 0; i < 40 && hook == null; i++) {       // hooks start together: find it
                hook = Thread.getAllStackTraces().keySet().stream()
                        .filter(t -> t.getName().equals("DataNode-Shutdown-Hook")).findFirst().orElse(null);
                if (hook == null) {
                    Thread.sleep(50);
                }
            }
            if (hook == null) {
                return;                                          // no DataNode hook: the default exit
            }
            hook.join(DATANODE_STOP_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Runtime.getRuntime().halt(143);
    }

    static URL[] jars(File dir) throws Exception {
        File[] files = dir.listFiles((d, n) -> n.endsWith(".jar"));
        if (files == null || files.length == 0) {
            die("no jars in " + dir, null);
        }
        List<URL> out = new ArrayList<>();
        for (File f : files) {
            out.add(f.toURI().toURL());
        }
        return out.toArray(new URL[0]);
    }

    /** A node's main(-s) on a thread of its own, in a class loader of its own. */
    static void run(String name, URL[] jars, String mainClass) throws Exception {
        ClassLoader loader = new URLClassLoader(name, jars, ClassLoader.getPlatformClassLoader());
        Method main = loader.loadClass(mainClass).getMethod("main", String[].class);
        Thread t = new Thread(() -> {
            try {
                main.invoke(null, (Object) new String[] {"-s"});
            } catch (InvocationTargetException e) {
                die("the " + name + " failed", e.getCause());
            } catch (Throwable e) {
                die("the " + name + " failed", e);
            }
        }, "launcher-" + name);
        t.setContextClassLoader(loader);
        t.start();
    }

    static boolean accepts(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    static void die(String what, Throwable cause) {
        System.err.println("launcher: " + what + (cause == null ? "" : ": " + cause));
        if (cause != null) {
            cause.printStackTrace();
        }
        Runtime.getRuntime().halt(1);
    }
}
