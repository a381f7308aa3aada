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
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Grouped;

public class StreamsDriver {
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
        DriverIO.putConfigs(props, args, 5);

        StreamsBuilder builder = new StreamsBuilder();
        builder.<byte[], byte[]>stream(Arrays.asList(args[3].split(",")))
                .groupBy((key, value) -> value, Grouped.with("by-value", Serdes.ByteArray(), Serdes.ByteArray()))
                .count();

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> DriverIO.say("STATE " + now));
        streams.setUncaughtExceptionHandler(e -> {
            DriverIO.say("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        DriverIO.say("READY");
        LinkedBlockingQueue<String> commands = DriverIO.commands();
        for (String command = commands.take(); !command.equals("close"); command = commands.take()) {
            if (command.equals("start")) streams.start();
        }
        streams.close(Duration.ofSeconds(30));
        DriverIO.say("CLOSED");
    }
}
