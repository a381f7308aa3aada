// What every driver here shares with the test that steers it (tests/support/java_clients.py): one event per
// line on stdout, consumer configs as key=value arguments, and commands read from stdin, one per line.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.concurrent.LinkedBlockingQueue;

final class DriverIO {
    private DriverIO() {
    }

    /** One event line, whole, even when a client thread reports at the same time. */
    static void say(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }

    /** The key=value arguments from `first` on, put into `props` (they override the driver's defaults). */
    static void putConfigs(Properties props, String[] args, int first) {
        for (int i = first; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
    }

    /** stdin's lines, trimmed, as a queue a polling loop drains; "close" follows the last (end of stdin closes). */
    static LinkedBlockingQueue<String> commands() {
        LinkedBlockingQueue<String> commands = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) commands.add(line.trim());
            } catch (Exception e) {
                // stdin gone: close below
            }
            commands.add("close");
        });
        reader.setDaemon(true);
        reader.start();
        return commands;
    }
}
