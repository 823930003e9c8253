// The single-file launcher of the OpenSearch and Elasticsearch runners (phases 2-5: the
// server tsbench runs for target elasticsearch). Java 17 runs it straight from source:
//
//   java -cp "lib/*" Launcher.java <runner class> <base dir> key=value...
//
// The runners' own main() probes HTTP ports only up to 9299 and has no transport-port
// option, so this launcher builds a one-node cluster itself: every key=value argument goes
// into the node's settings (http.port, transport.port, network.host, discovery.type,
// path.data, path.logs, ...), the HTTP port probe is off (setMaxHttpPort(-1)), then build,
// wait for yellow, and wait until killed. SIGTERM closes the node cleanly (a shutdown hook).
// The runner classes are reached by reflection, so one file serves both products
// (org.codelibs.opensearch.runner.OpenSearchRunner and
// org.codelibs.elasticsearch.runner.ElasticsearchClusterRunner), whose packages differ.

import java.io.Closeable;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.LinkedHashMap;
import java.util.Map;

public class Launcher {

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Launcher <runner class> <base dir> key=value...");
            System.exit(2);
        }
        Class<?> runnerClass = Class.forName(args[0]);
        Map<String, String> settings = new LinkedHashMap<>();
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                System.err.println("launcher: not key=value: " + args[i]);
                System.exit(2);
            }
            settings.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        Object runner = runnerClass.getConstructor().newInstance();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> close(runner)));
        try {
            start(runnerClass, runner, args[1], settings);
        } catch (Throwable e) {
            Throwable cause = e;
            while (cause.getCause() != null && cause.getCause() != cause) {
                cause = cause.getCause();
            }
            System.err.println("launcher: the node did not start: " + cause);
            e.printStackTrace();
            System.exit(1);
        }
        System.out.println("launcher: cluster is yellow or green");
        Method isClosed = runnerClass.getMethod("isClosed");
        while (!(Boolean) isClosed.invoke(runner)) {
            Thread.sleep(1000);
        }
    }

    static void start(Class<?> runnerClass, Object runner, String base, Map<String, String> settings)
            throws Exception {
        runnerClass.getMethod("setMaxHttpPort", int.class).invoke(runner, -1);
        Class<?> builderType = Class.forName(runnerClass.getName() + "$Builder");
        InvocationHandler onBuild = (proxy, method, margs) -> {
            switch (method.getName()) {
                case "build":
                    Object b = margs[1];
                    Method put = b.getClass().getMethod("put", String.class, String.class);
                    for (Map.Entry<String, String> e : settings.entrySet()) {
                        put.invoke(b, e.getKey(), e.getValue());
                    }
                    return null;
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return proxy == margs[0];
                default:
                    return "Launcher$Builder";
            }
        };
        Object builder = Proxy.newProxyInstance(Launcher.class.getClassLoader(), new Class<?>[] {builderType}, onBuild);
        runnerClass.getMethod("onBuild", builderType).invoke(runner, builder);
        // the runner prints (and, unless set, uses) baseHttpPort + 1 as the node's HTTP port
        int basePort = Integer.parseInt(settings.getOrDefault("http.port", "9201")) - 1;
        String[] runnerArgs = {"-basePath", base, "-numOfNode", "1", "-clusterName", "tsbench",
                               "-baseHttpPort", String.valueOf(basePort),
                               "-dataPath", settings.getOrDefault("path.data", base + "/data"),
                               "-logsPath", settings.getOrDefault("path.logs", base + "/logs"), "-printOnFailure"};
        runnerClass.getMethod("build", String[].class).invoke(runner, (Object) runnerArgs);
        runnerClass.getMethod("ensureYellow", String[].class).invoke(runner, (Object) new String[0]);
    }

    static void close(Object runner) {
        try {
            ((Closeable) runner).close();
            // the raw stderr: the node has put log4j streams in System.out/err, and log4j stops in its own hook
            new PrintStream(new FileOutputStream(FileDescriptor.err), true).println("launcher: the node is closed");
        } catch (Exception e) {
            System.err.println("launcher: close: " + e);
        }
    }
}
