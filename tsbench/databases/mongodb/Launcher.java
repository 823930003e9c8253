// mongo-java-server as tsbench's local MongoDB-wire stand-in (phases 2-5): an
// in-memory backend bound to 127.0.0.1 on the port given; it runs until the JVM
// is stopped (SIGTERM from tsbench). Args: PORT.

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

public class Launcher {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        MongoServer server = new MongoServer(new MemoryBackend());
        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow));
        server.bind("127.0.0.1", port);
        System.out.println("mongo-java-server listening on 127.0.0.1:" + port);
        Thread.currentThread().join();
    }
}
