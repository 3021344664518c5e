package wren.interop;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Produces and consumes the interop records with Apache Kafka's Java client.
 *
 * <pre>
 *   Interop produce BOOTSTRAP TOPIC CODEC EXPECTED [TIMEOUT_S]
 *   Interop consume BOOTSTRAP TOPIC DUMP [TIMEOUT_S]
 *   Interop group BOOTSTRAP TOPIC GROUP PROTOCOL [TIMEOUT_S]
 * </pre>
 *
 * The file formats are those of interop/python/records.py: EXPECTED is TSV (key, value,
 * headers as name=value,name=value), the dump adds partition and offset in front. consume
 * reads every partition from the start up to the end offsets it finds at start, so
 * duplicates in the log show up in the dump too.
 *
 * <p>group is a group member (PROTOCOL classic, or consumer for KIP-848's group.protocol):
 * it reads until nothing arrives for a few seconds, commits what it read whenever partitions
 * are revoked and at the end, and prints the value of every record it read, one a line.
 * Several run side by side share the partitions; a second run of a finished group reads
 * nothing.
 */
public final class Interop {
    private Interop() {}

    public static void main(String[] args) throws Exception {
        // Before the first logger: slf4j-simple reads its settings once.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        String mode = args.length > 0 ? args[0] : "";
        // Arguments before the optional timeout, the mode included.
        int fixed = switch (mode) {
            case "produce" -> 5;
            case "consume" -> 4;
            case "group" -> 5;
            default -> -1;
        };
        if (fixed < 0 || args.length < fixed || args.length > fixed + 1) {
            usage();
        }
        long timeoutS = args.length > fixed ? Long.parseLong(args[fixed]) : 120;
        switch (mode) {
            case "produce" -> produce(args[1], args[2], args[3], Path.of(args[4]), timeoutS);
            case "consume" -> consume(args[1], args[2], Path.of(args[3]), timeoutS);
            case "group" -> group(args[1], args[2], args[3], args[4], timeoutS);
            default -> usage();
        }
    }

    private static void usage() {
        System.err.println("usage: Interop produce BOOTSTRAP TOPIC CODEC EXPECTED [TIMEOUT_S]");
        System.err.println("       Interop consume BOOTSTRAP TOPIC DUMP [TIMEOUT_S]");
        System.err.println("       Interop group BOOTSTRAP TOPIC GROUP classic|consumer [TIMEOUT_S]");
        System.exit(2);
    }

    // clientProperties are the client settings every mode starts from: those of the
    // file WREN_INTEROP_CLIENT_PROPERTIES names (security.protocol, sasl.*, ssl.*), if set.
    private static Properties clientProperties() throws IOException {
        Properties p = new Properties();
        String file = System.getenv("WREN_INTEROP_CLIENT_PROPERTIES");
        if (file != null && !file.isEmpty()) {
            try (BufferedReader in = Files.newBufferedReader(Path.of(file), StandardCharsets.UTF_8)) {
                p.load(in);
            }
        }
        return p;
    }

    private static void produce(String bootstrap, String topic, String codec, Path expected, long timeoutS)
            throws IOException, InterruptedException {
        Properties p = clientProperties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        // Idempotence stays at the Java client's default (on): InitProducerId, producer
        // ids and sequence checks are served.
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(TimeUnit.SECONDS.toMillis(timeoutS)));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());

        AtomicInteger failed = new AtomicInteger();
        AtomicReference<Exception> first = new AtomicReference<>();
        int sent = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p);
             BufferedReader in = Files.newBufferedReader(expected, StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.split("\t", -1);
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, f[0], f[1]);
                if (!f[2].isEmpty()) {
                    for (String h : f[2].split(",")) {
                        int eq = h.indexOf('=');
                        r.headers().add(h.substring(0, eq), h.substring(eq + 1).getBytes(StandardCharsets.UTF_8));
                    }
                }
                producer.send(r, (md, e) -> {
                    if (e != null) {
                        failed.incrementAndGet();
                        first.compareAndSet(null, e);
                    }
                });
                sent++;
            }
            producer.flush();
        }
        if (failed.get() > 0) {
            System.err.printf("java produce: %d of %d sends failed, first: %s%n", failed.get(), sent, first.get());
            System.exit(1);
        }
    }

    private static void consume(String bootstrap, String topic, Path dump, long timeoutS) throws IOException {
        Properties p = clientProperties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        // No group.id: partitions are read by assignment and nothing is committed, since
        // wren has no group coordinator yet.
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());

        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutS);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p);
             BufferedWriter out = Files.newBufferedWriter(dump, StandardCharsets.UTF_8)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo pi : consumer.partitionsFor(topic, Duration.ofSeconds(timeoutS))) {
                parts.add(new TopicPartition(topic, pi.partition()));
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            Map<TopicPartition, Long> ends = consumer.endOffsets(parts, Duration.ofSeconds(timeoutS));
            Map<TopicPartition, Long> pos = new HashMap<>();
            for (TopicPartition tp : parts) {
                pos.put(tp, 0L);
            }
            while (parts.stream().anyMatch(tp -> pos.get(tp) < ends.get(tp))) {
                if (System.nanoTime() > deadline) {
                    System.err.printf("java consume: deadline with positions %s, ends %s%n", pos, ends);
                    System.exit(1);
                }
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    StringBuilder hs = new StringBuilder();
                    for (Header h : r.headers()) {
                        if (hs.length() > 0) {
                            hs.append(',');
                        }
                        hs.append(h.key()).append('=').append(new String(h.value(), StandardCharsets.UTF_8));
                    }
                    out.write(r.partition() + "\t" + r.offset() + "\t" + r.key() + "\t" + r.value() + "\t" + hs + "\n");
                    pos.put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
                }
            }
        }
    }

    private static void group(String bootstrap, String topic, String group, String protocol, long timeoutS)
            throws IOException {
        Properties p = clientProperties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutS);
        int n = 0;
        java.io.PrintWriter out = new java.io.PrintWriter(new java.io.BufferedWriter(
                new java.io.OutputStreamWriter(System.out, StandardCharsets.UTF_8)));
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic), new org.apache.kafka.clients.consumer.ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(java.util.Collection<TopicPartition> parts) {
                    // What was read of a partition is committed before another member
                    // takes it: nothing is read twice.
                    consumer.commitSync();
                }

                @Override
                public void onPartitionsAssigned(java.util.Collection<TopicPartition> parts) {}
            });
            // Stop once nothing came for 6 s after the last record, or for 20 s when
            // nothing came at all (records may be produced after the members join).
            long last = System.nanoTime();
            while (System.nanoTime() < deadline) {
                int got = 0;
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(300))) {
                    out.println(r.value());
                    got++;
                }
                n += got;
                if (got > 0) {
                    last = System.nanoTime();
                    continue;
                }
                long idle = TimeUnit.SECONDS.toNanos(n == 0 ? 20 : 6);
                if (System.nanoTime() - last > idle) {
                    break;
                }
            }
            consumer.commitSync();
        } finally {
            out.flush();
        }
    }
}
