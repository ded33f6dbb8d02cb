// sarama_group: Debian's sarama 1.22 (golang-github-shopify-sarama-dev), as distributions ship
// it, against the broker: a producer and a group consumer pinned to Kafka 0.10.2 (sarama's
// oldest with groups), which send Produce v2 (magic 1 messages), Fetch v3, JoinGroup v1 and
// OffsetCommit v1, versions Kafka 4.0 removed (KIP-896).
//
//	sarama_group -bootstrap HOST:PORT -topic T -produce N -from F    sends records F..F+N-1
//	sarama_group -bootstrap HOST:PORT -topic T -group G -consume N -from F
//	    reads N records as a member of G, which must be records F..F+N-1 in order, commits
//	    them, and must then read nothing more within a second
//
// Exits 1 with a message on stderr at the first mismatch; every wait has a deadline.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/Shopify/sarama"
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "sarama_group: FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V0_10_2_0
	c.ClientID = "sarama-1.22"
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Return.Errors = true
	return c
}

type reader struct {
	want, from int
	got        []*sarama.ConsumerMessage
	done       chan struct{}
	extra      chan *sarama.ConsumerMessage
}

func (r *reader) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (r *reader) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (r *reader) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		if len(r.got) >= r.want {
			r.extra <- msg
			continue
		}
		r.got = append(r.got, msg)
		sess.MarkMessage(msg, "")
		if len(r.got) == r.want {
			close(r.done)
		}
	}
	return nil
}

func main() {
	bootstrap := flag.String("bootstrap", "", "broker address")
	topic := flag.String("topic", "", "topic")
	group := flag.String("group", "", "consumer group")
	produce := flag.Int("produce", 0, "records to send")
	consume := flag.Int("consume", 0, "records to read")
	from := flag.Int("from", 0, "number of the first record")
	flag.Parse()
	addrs := []string{*bootstrap}
	if *produce > 0 {
		p, err := sarama.NewSyncProducer(addrs, config())
		if err != nil {
			fail("producer: %v", err)
		}
		for i := *from; i < *from+*produce; i++ {
			_, offset, err := p.SendMessage(&sarama.ProducerMessage{Topic: *topic, Key: sarama.StringEncoder(fmt.Sprintf("k%06d", i)), Value: sarama.StringEncoder(fmt.Sprintf("v%06d", i))})
			if err != nil {
				fail("send of record %d: %v", i, err)
			}
			if offset != int64(i) {
				fail("record %d got offset %d", i, offset)
			}
		}
		if err := p.Close(); err != nil {
			fail("producer close: %v", err)
		}
		fmt.Fprintf(os.Stderr, "sarama_group: sent %d\n", *produce)
		return
	}
	g, err := sarama.NewConsumerGroup(addrs, *group, config())
	if err != nil {
		fail("consumer group: %v", err)
	}
	go func() {
		for err := range g.Errors() {
			fmt.Fprintf(os.Stderr, "sarama_group: consumer error: %v\n", err)
		}
	}()
	r := &reader{want: *consume, from: *from, done: make(chan struct{}), extra: make(chan *sarama.ConsumerMessage, 1024)}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{*topic}, r); err != nil {
				stopped <- err
				return
			}
		}
		stopped <- nil
	}()
	select {
	case <-r.done:
	case err := <-stopped:
		fail("consume stopped after %d records: %v", len(r.got), err)
	case <-time.After(60 * time.Second):
		fail("read %d of %d records in 60 s", len(r.got), r.want)
	}
	select {
	case m := <-r.extra:
		fail("a record past the %d expected: offset %d", r.want, m.Offset)
	case <-time.After(time.Second):
	}
	cancel()
	if err := g.Close(); err != nil {
		fail("close (commits the marked offsets): %v", err)
	}
	for j, m := range r.got {
		i := *from + j
		if m.Offset != int64(i) || string(m.Key) != fmt.Sprintf("k%06d", i) || string(m.Value) != fmt.Sprintf("v%06d", i) {
			fail("record %d read is offset %d %q=%q, expected offset %d", j, m.Offset, m.Key, m.Value, i)
		}
	}
	fmt.Fprintf(os.Stderr, "sarama_group: read %d from %d\n", len(r.got), *from)
}
