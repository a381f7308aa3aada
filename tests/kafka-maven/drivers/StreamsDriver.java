// A Kafka Streams application driven by a test over stdin/stdout (tests/support/java_clients.py starts it).
//
// Usage: StreamsDriver <bootstrap> <application.id> <protocol: classic|streams> <topic,topic,...> <state dir>
//                      [key=value ...]
// Its topology counts the records of the source topics by value: stream(topics).groupBy(value).count(), so
// it has two subtopologies: the sources, and the repartition topic <application.id>-...-repartition that
// feeds the count (whose store writes the changelog <application.id>-...-changelog). Streams commits the
// offsets of the source and repartition topics every commit.interval.ms (100 ms here).
// protocol "streams" sets group.protocol=streams (the streams rebalance protocol, KIP-1071: StreamsConfig
// has group.protocol from 4.1); "classic" leaves it out (Streams joins as a classic "consumer" group).
// The extra key=value pairs are Streams configs. It prints one line per event:
//   STATE <state>                  each KafkaStreams state change (CREATED, REBALANCING, RUNNING, ...)
//   ERROR <class>: <message>       an uncaught exception of a stream thread (the client then shuts down)
//   CLOSED                         after `close`
//   READY                          built, waiting for `start` (the JVM is warm: a test can time the join)
// Commands, one per line on stdin: `start` (KafkaStreams.start()), `close` (close() and exit 0). End of
// stdin closes it too.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Grouped;

public class StreamsDriver {
    private static void say(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        if (args[2].equals("streams")) {
            props.put("group.protocol", "streams");
        }
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass().getName());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass().getName());
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), "500");
        props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), "10000");
        for (int i = 5; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.<byte[], byte[]>stream(Arrays.asList(args[3].split(",")))
                .groupBy((key, value) -> value, Grouped.with("by-value", Serdes.ByteArray(), Serdes.ByteArray()))
                .count();

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> say("STATE " + now));
        streams.setUncaughtExceptionHandler(e -> {
            say("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        say("READY");
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.trim().equals("start")) streams.start();
                if (line.trim().equals("close")) break;
            }
        }
        streams.close(Duration.ofSeconds(30));
        say("CLOSED");
    }
}
