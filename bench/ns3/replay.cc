// polyphony-ns3-replay: replays a polyphony flow trace (`polyphony simulate --export-trace`) in
// ns-3.37 and writes every finished flow's completion time, so pktsim can be checked against an
// independent packet-level simulator on identical arrivals.
//
// Usage: polyphony-ns3-replay TRACE OUT.csv [--nic-marking] [--qdisc] [--no-tsq]
//   OUT.csv gets `id,fct_ns` per finished flow; a summary goes to stderr. --nic-marking also
//   marks at hosts' NIC queues (pktsim does not; see docs/results/pktsim-vs-ns3/summary.md).
//   --no-tsq runs ns-3's own sockets, which queue any window at the NIC (see TsqTcpSocket).
//   --qdisc runs the scheduler as a queue disc in front of a one-packet device queue instead
//   (ns-3's usual arrangement; see ClassDrrQueueDisc; without TSQ, which the device queue
//   counts). POLYPHONY_NS3_DEBUG_FLOW=<id> prints one flow's sender events, and the per-class
//   queue bytes at every port its packets enter, to stderr.
//
// What it builds (mirroring pktsim, crates/polyphony-model/src/pktsim/mod.rs):
// * The trace's dumbbell or two-tier leaf-spine, point-to-point links with the trace's rates and
//   delays. A leaf-spine flow takes the spine pktsim's ECMP hash picks (same hash, same salt):
//   every host has one address per spine (10.s.rack.i+1) and static routes send address s
//   through spine s, so data and ACKs of a flow cross the same spine both ways.
// * Every egress port (switch ports and host NICs) is scheduled by DrrPort: one FIFO per class,
//   deficit round robin with quanta proportional to the class weights (1514 B x classes x
//   weight), a shared byte limit (the trace's port buffer, default 1 MB; host NICs unlimited),
//   optional per-class limits (a packet's class is its flow's, found by port; see
//   ClassOfPorts), and step ECN marking on enqueue when the class queue including the packet
//   exceeds K (switch ports only unless --nic-marking). Sizes are counted as pktsim counts
//   them: the IP packet plus a 14-byte Ethernet header. The scheduler is the device's own queue
//   (ClassDrrDeviceQueue), so it picks the next packet when the wire falls idle, as pktsim does.
// * DCTCP (g = 1/16, alpha starts at 1, the window never cut below two segments as in Linux;
//   and halved on a loss; see TcpDctcpFloor), MSS 1448, timestamps on (66-byte headers), no SACK,
//   classic (NewReno) recovery, no limited transmit, an ACK per segment, RTO = srtt +
//   max(4 rttvar, 200 ms) as Linux, SYN timeout 1 s, the class's initial window per connection,
//   large socket buffers. Senders' retransmission timeouts and fast recoveries are counted.
// * TCP small queues as Linux and pktsim (TsqTcpSocket): a sender keeps at most 1 ms of its
//   NIC's line rate (at least two full packets) of data queued at its NIC, and its window grows
//   only while the window is what limits it (Linux's tcp_is_cwnd_limited). ns-3.37 has neither:
//   a flow alone at its NIC's bottleneck, never marked there, grew its window into MBs of NIC
//   queue, and every later flow of its class from that host waited behind them.
// * A flow: at its start the receiver opens a listener of its own (closed after accept) and the
//   sender connects, writes the flow's bytes, and waits for the receiver's one-byte
//   application ack of the last byte; FCT = that ack's arrival - start (polyphony's IdealFct
//   definition). Both ends close afterwards.
//
// Known difference from pktsim: a point-to-point frame carries a 2-byte PPP header where pktsim
// serialises a 14-byte Ethernet header, so each full segment is 12 bytes (0.8 %) shorter on the
// wire.

#include <ns3/applications-module.h>
#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>
#include <ns3/ppp-header.h>
#include <ns3/traffic-control-module.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

const uint32_t kMss = 1448;
const uint32_t kEthernet = 14;
const uint32_t kQuantumBase = 1514;
const uint32_t kPureAckIp = 52; // IPv4 20 + TCP with timestamps 32
const uint16_t kFirstPort = 1024;
// Class index of the flow listening on port kFirstPort + i.
std::vector<uint8_t> g_portClass;
// Listener port of the flow named by POLYPHONY_NS3_DEBUG_FLOW (0: none).
uint16_t g_debugPort = 0;

// TCP small queues: a data segment of the flow listening on dstPort, sent from srcPort, entered
// (delta > 0) or left (delta < 0) its sender's NIC queue (defined after TsqTcpSocket).
void TsqNic(uint16_t srcPort, uint16_t dstPort, int64_t delta);

struct ClassCfg
{
    uint8_t dscp = 0;
    double weight = 0;
    uint64_t k = 0;
    uint32_t initcwnd = 10;
    uint64_t buffer = 0; // 0: none
};

struct FlowRec
{
    uint64_t id = 0;
    uint32_t src = 0, dst = 0;
    uint8_t dscp = 0;
    uint64_t size = 0;
    uint64_t start = 0;
};

struct Trace
{
    std::string kind;
    uint32_t senders = 0, racks = 0, hostsPerRack = 0, spines = 0;
    double hostMbps = 0, fabricMbps = 0, delayUs = 0;
    uint64_t salt = 0;
    uint64_t portBuffer = 1000000;
    std::vector<ClassCfg> classes;
    std::vector<FlowRec> flows;
};

[[noreturn]] void
Fail(const std::string& where, const std::string& why)
{
    std::cerr << "polyphony-ns3-replay: " << where << ": " << why << std::endl;
    std::exit(2);
}

std::map<std::string, std::string>
KeyValues(std::istringstream& in, const std::string& where)
{
    std::map<std::string, std::string> kv;
    std::string w;
    while (in >> w)
    {
        auto eq = w.find('=');
        if (eq == std::string::npos)
        {
            Fail(where, "\"" + w + "\" is not key=value");
        }
        kv[w.substr(0, eq)] = w.substr(eq + 1);
    }
    return kv;
}

double
Num(const std::map<std::string, std::string>& kv, const std::string& key, const std::string& where)
{
    auto it = kv.find(key);
    if (it == kv.end())
    {
        Fail(where, "missing " + key + "=");
    }
    try
    {
        return std::stod(it->second);
    }
    catch (...)
    {
        Fail(where, key + " = \"" + it->second + "\" is not a number");
    }
}

// Parses the trace format of polyphony_spec::FlowTrace. The Rust importer is the strict one;
// this reader checks what it relies on and names the line of anything it cannot use.
Trace
ReadTrace(const std::string& path)
{
    std::ifstream f(path);
    if (!f)
    {
        Fail(path, "cannot open");
    }
    Trace t;
    std::string line;
    size_t ln = 0;
    bool header = false;
    while (std::getline(f, line))
    {
        ln++;
        std::string where = path + ":" + std::to_string(ln);
        if (line.empty())
        {
            continue;
        }
        if (ln == 1)
        {
            if (line != "# polyphony-trace 1")
            {
                Fail(where, "not a polyphony trace (first line must be \"# polyphony-trace 1\")");
            }
            continue;
        }
        if (line[0] == '#')
        {
            std::istringstream in(line.substr(1));
            std::string key;
            in >> key;
            if (key == "topology")
            {
                in >> t.kind;
                auto kv = KeyValues(in, where);
                t.delayUs = Num(kv, "link_delay_us", where);
                if (t.kind == "dumbbell")
                {
                    t.senders = Num(kv, "senders", where);
                    t.hostMbps = t.fabricMbps = Num(kv, "rate_mbps", where);
                }
                else if (t.kind == "leaf_spine")
                {
                    t.racks = Num(kv, "racks", where);
                    t.hostsPerRack = Num(kv, "hosts_per_rack", where);
                    t.spines = Num(kv, "spines", where);
                    t.hostMbps = Num(kv, "host_rate_mbps", where);
                    t.fabricMbps = Num(kv, "fabric_rate_mbps", where);
                }
                else
                {
                    Fail(where, "topology kind \"" + t.kind + "\": use dumbbell or leaf_spine");
                }
            }
            else if (key == "ecmp_salt")
            {
                in >> t.salt;
            }
            else if (key == "port_buffer_bytes")
            {
                in >> t.portBuffer;
            }
            else if (key == "class")
            {
                auto kv = KeyValues(in, where);
                ClassCfg c;
                c.dscp = Num(kv, "dscp", where);
                c.weight = Num(kv, "weight", where);
                c.k = Num(kv, "ecn_threshold_bytes", where);
                c.initcwnd = Num(kv, "init_cwnd", where);
                if (kv.count("buffer_bytes"))
                {
                    c.buffer = Num(kv, "buffer_bytes", where);
                }
                t.classes.push_back(c);
            }
            continue;
        }
        if (!header)
        {
            if (line != "id,src,dst,dscp,size,start")
            {
                Fail(where, "expected the header \"id,src,dst,dscp,size,start\"");
            }
            header = true;
            continue;
        }
        FlowRec r;
        unsigned dscp = 0;
        char extra = 0;
        if (std::sscanf(line.c_str(),
                        "%lu,%u,%u,%u,%lu,%lu%c",
                        &r.id,
                        &r.src,
                        &r.dst,
                        &dscp,
                        &r.size,
                        &r.start,
                        &extra) != 6)
        {
            Fail(where, "expected id,src,dst,dscp,size,start");
        }
        r.dscp = dscp;
        t.flows.push_back(r);
    }
    if (t.kind.empty() || t.classes.empty())
    {
        Fail(path, "no topology or no class lines");
    }
    return t;
}

// SplitMix64 finaliser, exactly pktsim's `mix64` (crates/polyphony-model/src/topology.rs).
uint64_t
Mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

} // namespace

namespace ns3
{

// The scheduler of one port: per-class byte counts against a shared byte limit and optional
// per-class limits, step ECN marking at K, and deficit round robin with quanta proportional to
// the class weights (see the file comment). Sizes are wire bytes as pktsim counts them.
struct DrrPort
{
    void Configure(const std::vector<ClassCfg>& classes, uint64_t limit, bool mark)
    {
        m_classes = classes;
        m_limit = limit;
        m_mark = mark;
        size_t n = classes.size();
        m_bytes.assign(n, 0);
        m_deficit.assign(n, 0);
        m_quantum.clear();
        for (const auto& c : classes)
        {
            m_quantum.push_back(std::max<int64_t>(1, std::llround(c.weight * kQuantumBase * n)));
        }
    }

    // Whether a packet of class c and b wire bytes fits.
    bool Fits(size_t c, uint64_t b) const
    {
        uint64_t classLimit = m_classes[c].buffer;
        return m_total + b <= m_limit && (classLimit == 0 || m_bytes[c] + b <= classLimit);
    }

    // Whether an arriving packet (IP size ipBytes) is to be marked: data above K.
    bool ShouldMark(size_t c, uint64_t b, uint64_t ipBytes) const
    {
        return m_mark && ipBytes > kPureAckIp && m_bytes[c] + b > m_classes[c].k;
    }

    void Added(size_t c, uint64_t b, uint64_t tcpDstPort)
    {
        if (g_debugPort != 0 && tcpDstPort == g_debugPort)
        {
            std::cerr << Simulator::Now().GetNanoSeconds() << " enq port " << this << " class_bytes";
            for (auto q : m_bytes)
            {
                std::cerr << " " << q;
            }
            std::cerr << std::endl;
        }
        enqueued[c]++;
        m_bytes[c] += b;
        m_total += b;
        maxBytes[c] = std::max(maxBytes[c], m_bytes[c]);
    }

    // The class to send from next; headBytes(c) is the wire size of class c's head packet, or
    // 0 when class c is empty. Call only when something is queued; then call Removed.
    template <typename F>
    size_t Pick(F headBytes)
    {
        size_t n = m_classes.size();
        for (;;)
        {
            size_t c = m_cur;
            uint64_t b = headBytes(c);
            if (b > 0)
            {
                if (!m_granted)
                {
                    m_deficit[c] += m_quantum[c];
                    m_granted = true;
                }
                if (static_cast<int64_t>(b) <= m_deficit[c])
                {
                    return c;
                }
            }
            m_granted = false;
            m_cur = (c + 1) % n;
        }
    }

    // Class c's head packet of b wire bytes left; classEmpty: nothing of c remains.
    void Removed(size_t c, uint64_t b, bool classEmpty)
    {
        m_deficit[c] -= b;
        m_bytes[c] -= b;
        m_total -= b;
        if (classEmpty)
        {
            m_deficit[c] = 0;
            m_granted = false;
            m_cur = (c + 1) % m_classes.size();
        }
    }

    uint64_t Total() const
    {
        return m_total;
    }

    uint64_t marks = 0;
    uint64_t drops = 0;
    uint64_t enqueued[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    uint64_t maxBytes[8] = {0, 0, 0, 0, 0, 0, 0, 0};

  private:
    std::vector<ClassCfg> m_classes;
    uint64_t m_limit = 0;
    bool m_mark = false;
    std::vector<uint64_t> m_bytes;
    std::vector<int64_t> m_deficit;
    std::vector<int64_t> m_quantum;
    uint64_t m_total = 0;
    size_t m_cur = 0;
    bool m_granted = false;
};

// The class of a packet is its flow's: ns-3.37's TCP sends data segments with DSCP 0 once ECN
// is negotiated (and a TOS set on the socket afterwards clears ECT), so the DSCP on the wire
// cannot be trusted. Every flow has a listener port of its own (kFirstPort + its index), the
// destination port of its data and the source port of its ACKs.
size_t
ClassOfPorts(const TcpHeader& th)
{
    for (uint16_t port : {th.GetDestinationPort(), th.GetSourcePort()})
    {
        if (port >= kFirstPort && port - kFirstPort < g_portClass.size())
        {
            return g_portClass[port - kFirstPort];
        }
    }
    return 0;
}

// The point-to-point device's own queue, scheduled by DrrPort: the device takes its next packet
// from here exactly when the wire falls idle, so the scheduler decides at transmission start as
// pktsim's ports (and an output-queued switch) do. Packets here carry their PPP header.
class ClassDrrDeviceQueue : public Queue<Packet>
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::ClassDrrDeviceQueue<Packet>")
                                .SetParent<Queue<Packet>>()
                                .SetGroupName("Network")
                                .AddConstructor<ClassDrrDeviceQueue>();
        return tid;
    }

    DrrPort port;

    // hostNic: the queue of a host's NIC, where TCP small queues count a sender's data.
    void Configure(const std::vector<ClassCfg>& classes, uint64_t limit, bool mark, bool hostNic)
    {
        port.Configure(classes, limit, mark);
        m_hostNic = hostNic;
        m_fifo.assign(classes.size(), {});
        // The byte limits are DrrPort's; the base queue never refuses.
        SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, 100000000));
    }

    bool Enqueue(Ptr<Packet> p) override
    {
        Ipv4Header ip;
        TcpHeader th;
        size_t c = Parse(p, ip, th) ? ClassOfPorts(th) : 0;
        uint64_t b = Wire(p);
        if (!port.Fits(c, b))
        {
            port.drops++;
            DropBeforeEnqueue(p);
            return false;
        }
        if (port.ShouldMark(c, b, ip.GetPayloadSize() + ip.GetSerializedSize()) &&
            (ip.GetEcn() == Ipv4Header::ECN_ECT0 || ip.GetEcn() == Ipv4Header::ECN_ECT1))
        {
            // Rewrite the packet's IP header with CE.
            PppHeader ppp;
            p->RemoveHeader(ppp);
            p->RemoveHeader(ip);
            ip.SetEcn(Ipv4Header::ECN_CE);
            p->AddHeader(ip);
            p->AddHeader(ppp);
            port.marks++;
        }
        Iterator it;
        if (!DoEnqueue(GetContainer().end(), p, it))
        {
            return false;
        }
        m_fifo[c].push_back(it);
        port.Added(c, b, th.GetDestinationPort());
        if (m_hostNic && ip.GetPayloadSize() > th.GetSerializedSize())
        {
            TsqNic(th.GetSourcePort(), th.GetDestinationPort(), static_cast<int64_t>(b));
        }
        return true;
    }

    Ptr<Packet> Dequeue() override
    {
        if (port.Total() == 0)
        {
            return nullptr;
        }
        size_t c = port.Pick([this](size_t k) { return m_fifo[k].empty() ? 0 : Wire(*m_fifo[k].front()); });
        ConstIterator it = m_fifo[c].front();
        m_fifo[c].pop_front();
        Ptr<Packet> p = DoDequeue(it);
        port.Removed(c, Wire(p), m_fifo[c].empty());
        Ipv4Header ip;
        TcpHeader th;
        if (m_hostNic && Parse(p, ip, th) && ip.GetPayloadSize() > th.GetSerializedSize())
        {
            // A data segment leaves for the wire: its sender may queue another (as pktsim, at
            // the start of transmission).
            TsqNic(th.GetSourcePort(), th.GetDestinationPort(), -static_cast<int64_t>(Wire(p)));
        }
        return p;
    }

    Ptr<Packet> Remove() override
    {
        Ptr<Packet> p = Dequeue();
        if (p)
        {
            DropAfterDequeue(p);
        }
        return p;
    }

    Ptr<const Packet> Peek() const override
    {
        return GetContainer().empty() ? nullptr : *GetContainer().begin();
    }

  private:
    // The IP and TCP headers of a frame on this device; false when it carries no TCP header.
    static bool Parse(Ptr<const Packet> p, Ipv4Header& ip, TcpHeader& th)
    {
        Ptr<Packet> q = p->Copy();
        PppHeader ppp;
        q->RemoveHeader(ppp);
        q->RemoveHeader(ip);
        return q->PeekHeader(th) != 0;
    }

    // pktsim's wire size: the IP packet plus a 14-byte Ethernet header (here: minus PPP's 2).
    static uint64_t Wire(Ptr<const Packet> p)
    {
        return p->GetSize() - 2 + kEthernet;
    }

    std::vector<std::deque<ConstIterator>> m_fifo;
    bool m_hostNic = false;
};

NS_OBJECT_ENSURE_REGISTERED(ClassDrrDeviceQueue);

// The same scheduler as a queue disc in front of a one-packet device queue (--qdisc): the
// device holds the packet it will send next, so the scheduler commits one packet ahead and a
// packet of another class waits up to one more packet time at every port.
class ClassDrrQueueDisc : public QueueDisc
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::ClassDrrQueueDisc")
                                .SetParent<QueueDisc>()
                                .SetGroupName("TrafficControl")
                                .AddConstructor<ClassDrrQueueDisc>();
        return tid;
    }

    ClassDrrQueueDisc()
        : QueueDisc(QueueDiscSizePolicy::NO_LIMITS)
    {
    }

    DrrPort port;

    void Configure(const std::vector<ClassCfg>& classes, uint64_t limit, bool mark)
    {
        port.Configure(classes, limit, mark);
        m_nClasses = classes.size();
    }

  private:
    static uint64_t Wire(Ptr<const QueueDiscItem> item)
    {
        return item->GetSize() + kEthernet;
    }

    bool DoEnqueue(Ptr<QueueDiscItem> item) override
    {
        TcpHeader th;
        bool tcp = item->GetPacket()->PeekHeader(th) != 0;
        size_t c = tcp ? ClassOfPorts(th) : 0;
        uint64_t b = Wire(item);
        if (!port.Fits(c, b))
        {
            port.drops++;
            DropBeforeEnqueue(item, "buffer full");
            return false;
        }
        if (port.ShouldMark(c, b, item->GetSize()) && Mark(item, "above K"))
        {
            port.marks++;
        }
        if (!GetInternalQueue(c)->Enqueue(item))
        {
            return false;
        }
        port.Added(c, b, th.GetDestinationPort());
        return true;
    }

    Ptr<QueueDiscItem> DoDequeue() override
    {
        if (port.Total() == 0)
        {
            return nullptr;
        }
        size_t c = port.Pick([this](size_t k) {
            Ptr<const QueueDiscItem> head = GetInternalQueue(k)->Peek();
            return head ? Wire(head) : 0;
        });
        Ptr<QueueDiscItem> item = GetInternalQueue(c)->Dequeue();
        port.Removed(c, Wire(item), GetInternalQueue(c)->IsEmpty());
        return item;
    }

    bool CheckConfig() override
    {
        if (m_nClasses == 0)
        {
            return false;
        }
        while (GetNInternalQueues() < m_nClasses)
        {
            AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
                "MaxSize",
                QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 100000000))));
        }
        return true;
    }

    void InitializeParams() override
    {
    }

    size_t m_nClasses = 0;
};

NS_OBJECT_ENSURE_REGISTERED(ClassDrrQueueDisc);

// ns-3.37's TcpDctcp cuts the window to cwnd x (1 - alpha/2) with no floor, so a marked window
// of two segments becomes less than one segment and the sender stalls until a 200 ms RTO with
// nothing lost (seen on the 10 Gbit/s dumbbell: 3 % of flows). Linux's dctcp_ssthresh and
// pktsim keep at least two segments; so does this subclass.
// ns-3.37's TcpDctcp also uses cwnd x (1 - alpha/2) as the ssthresh after a loss; RFC 8257
// (section 3.3: react to loss as conventional TCP), Linux (dctcp_react_to_loss, on entering
// Recovery and on an RTO) and pktsim halve the window, at least two segments. This subclass
// does too: in fast recovery (the state is set before GetSsThresh is asked) and on the
// RTO's CA_EVENT_LOSS (once per loss episode: not again while the window is one segment).
class TcpDctcpFloor : public TcpDctcp
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::TcpDctcpFloor")
                                .SetParent<TcpDctcp>()
                                .SetGroupName("Internet")
                                .AddConstructor<TcpDctcpFloor>();
        return tid;
    }

    std::string GetName() const override
    {
        return "TcpDctcpFloor";
    }

    uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t bytesInFlight) override
    {
        if (tcb->m_congState == TcpSocketState::CA_RECOVERY)
        {
            return Halved(tcb);
        }
        return std::max(TcpDctcp::GetSsThresh(tcb, bytesInFlight), 2 * tcb->m_segmentSize);
    }

    void CwndEvent(Ptr<TcpSocketState> tcb, const TcpSocketState::TcpCAEvent_t event) override
    {
        if (event == TcpSocketState::CA_EVENT_LOSS && tcb->m_cWnd > tcb->m_segmentSize)
        {
            tcb->m_ssThresh = Halved(tcb);
        }
        TcpDctcp::CwndEvent(tcb, event);
    }

    // Congestion-window validation (RFC 7661; Linux's tcp_is_cwnd_limited, as pktsim): the
    // window grows only while it limits the sender. inFlightBeforeAck is the data outstanding
    // when the ACK arrived, set by TsqTcpSocket (-1: not known, grow as ns-3 does).
    void IncreaseWindow(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked) override
    {
        if (inFlightBeforeAck >= 0)
        {
            uint64_t cwnd = tcb->m_cWnd.Get();
            uint64_t inFlight = static_cast<uint64_t>(inFlightBeforeAck);
            bool limited = cwnd < tcb->m_ssThresh.Get() ? cwnd < 2 * inFlight
                                                        : inFlight + tcb->m_segmentSize >= cwnd;
            if (!limited)
            {
                return;
            }
        }
        TcpDctcp::IncreaseWindow(tcb, segmentsAcked);
    }

    Ptr<TcpCongestionOps> Fork() override
    {
        return CopyObject<TcpDctcpFloor>(this);
    }

    int64_t inFlightBeforeAck = -1;

  private:
    static uint32_t Halved(Ptr<const TcpSocketState> tcb)
    {
        return std::max(tcb->m_cWnd.Get() / 2, 2 * tcb->m_segmentSize);
    }
};

NS_OBJECT_ENSURE_REGISTERED(TcpDctcpFloor);

// A sender socket with Linux's TCP small queues: it sends new data only while less than `limit`
// bytes of its data wait in its NIC's queue (counted by ClassDrrDeviceQueue through TsqNic, the
// wire sizes pktsim counts), and sends again when one of them starts on the wire. It also tells
// its TcpDctcpFloor how much was in flight when each ACK arrived (congestion-window validation).
// Retransmissions are not held back (neither in pktsim).
class TsqTcpSocket : public TcpSocketBase
{
  public:
    uint64_t limit = UINT64_MAX;
    int64_t nicBytes = 0;
    mutable bool blocked = false;
    Ptr<TcpDctcpFloor> cc;

    // Whether this socket sends from srcPort.
    bool Owns(uint16_t srcPort) const
    {
        return m_endPoint != nullptr && m_endPoint->GetLocalPort() == srcPort;
    }

    // Sends what the window and the NIC allow (after the NIC took one of its segments).
    void Kick()
    {
        if (m_state == TcpSocket::ESTABLISHED || m_state == TcpSocket::CLOSE_WAIT)
        {
            SendPendingData(m_connected);
        }
    }

  protected:
    uint32_t AvailableWindow() const override
    {
        if (nicBytes >= static_cast<int64_t>(limit))
        {
            blocked = true;
            return 0;
        }
        return TcpSocketBase::AvailableWindow();
    }

    void ReceivedAck(Ptr<Packet> packet, const TcpHeader& tcpHeader) override
    {
        if (cc)
        {
            cc->inFlightBeforeAck = UnAckDataCount();
        }
        TcpSocketBase::ReceivedAck(packet, tcpHeader);
    }
};

} // namespace ns3

namespace
{

// The TSQ sender of the flow listening on port kFirstPort + i (null: none, --no-tsq).
std::vector<TsqTcpSocket*> g_tsq;

void
TsqNic(uint16_t srcPort, uint16_t dstPort, int64_t delta)
{
    if (dstPort < kFirstPort || static_cast<size_t>(dstPort - kFirstPort) >= g_tsq.size())
    {
        return;
    }
    TsqTcpSocket* s = g_tsq[dstPort - kFirstPort];
    if (s == nullptr || !s->Owns(srcPort))
    {
        return;
    }
    s->nicBytes += delta;
    if (delta < 0 && s->blocked && s->nicBytes < static_cast<int64_t>(s->limit))
    {
        s->blocked = false;
        // Not from inside the device's dequeue: the device is between two transmissions.
        Simulator::ScheduleNow(&TsqTcpSocket::Kick, Ptr<TsqTcpSocket>(s));
    }
}

} // namespace

namespace ns3
{

} // namespace ns3

namespace
{

struct FlowState
{
    const FlowRec* rec = nullptr;
    Ptr<Socket> sender, listener, receiver;
    uint64_t sent = 0, received = 0;
    bool acked = false, done = false;
    int64_t fct = -1;
};

std::vector<FlowState> g_flows;
uint64_t g_deviceDrops = 0;
uint64_t g_rtos = 0;
uint64_t g_recoveries = 0;

// Counts senders' retransmission timeouts (entering CA_LOSS) and fast recoveries.
void
CountCongState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t to)
{
    g_rtos += to == TcpSocketState::CA_LOSS;
    g_recoveries += to == TcpSocketState::CA_RECOVERY;
}

void
DeviceDrop(Ptr<const Packet>)
{
    g_deviceDrops++;
}

void
SenderFill(FlowState* st)
{
    while (st->sent < st->rec->size)
    {
        uint32_t room = st->sender->GetTxAvailable();
        if (room == 0)
        {
            return;
        }
        uint64_t n = std::min<uint64_t>({st->rec->size - st->sent, room, 1u << 20});
        int r = st->sender->Send(Create<Packet>(static_cast<uint32_t>(n)));
        if (r <= 0)
        {
            return;
        }
        st->sent += r;
    }
}

void
SenderConnected(FlowState* st, Ptr<Socket>)
{
    SenderFill(st);
}

void
SenderRoom(FlowState* st, Ptr<Socket>, uint32_t)
{
    SenderFill(st);
}

void
SenderRecv(FlowState* st, Ptr<Socket> s)
{
    Ptr<Packet> p;
    bool got = false;
    while ((p = s->Recv()))
    {
        got = got || p->GetSize() > 0;
    }
    if (got && !st->done)
    {
        st->done = true;
        st->fct = Simulator::Now().GetNanoSeconds() - static_cast<int64_t>(st->rec->start);
        s->Close();
    }
}

void
ReceiverRecv(FlowState* st, Ptr<Socket> s)
{
    Ptr<Packet> p;
    while ((p = s->Recv()))
    {
        st->received += p->GetSize();
    }
    if (!st->acked && st->received >= st->rec->size)
    {
        st->acked = true;
        s->Send(Create<Packet>(1));
        s->Close();
    }
}

void
ReceiverAccept(FlowState* st, Ptr<Socket> s, const Address&)
{
    st->receiver = s;
    s->SetIpTos(st->rec->dscp << 2);
    s->SetRecvCallback(MakeBoundCallback(&ReceiverRecv, st));
    st->listener->Close();
}

} // namespace

int
main(int argc, char** argv)
{
    if (argc < 3)
    {
        std::cerr << "usage: polyphony-ns3-replay TRACE OUT.csv [--nic-marking] [--qdisc] [--no-tsq]"
                  << std::endl;
        return 2;
    }
    bool nicMarking = false;
    bool qdisc = false;
    bool tsq = true;
    for (int i = 3; i < argc; i++)
    {
        std::string a = argv[i];
        if (a == "--nic-marking")
        {
            nicMarking = true;
        }
        else if (a == "--qdisc")
        {
            qdisc = true;
        }
        else if (a == "--no-tsq")
        {
            tsq = false;
        }
        else
        {
            Fail(a, "unknown option: use --nic-marking, --qdisc or --no-tsq");
        }
    }
    auto wall0 = std::chrono::steady_clock::now();
    Trace t = ReadTrace(argv[1]);
    const bool ls = t.kind == "leaf_spine";
    const uint32_t hosts = ls ? t.racks * t.hostsPerRack : t.senders + 1;
    const uint32_t aliases = ls ? t.spines : 1;
    for (size_t i = 0; i < t.flows.size(); i++)
    {
        const auto& r = t.flows[i];
        std::string where = std::string(argv[1]) + ": flow " + std::to_string(r.id);
        if (r.src >= hosts || r.dst >= hosts || r.src == r.dst)
        {
            Fail(where, "src/dst outside the topology or equal");
        }
        bool known = false;
        for (const auto& c : t.classes)
        {
            known = known || c.dscp == r.dscp;
        }
        if (!known)
        {
            Fail(where, "dscp without a class line");
        }
    }
    if (t.flows.size() > 60000)
    {
        Fail(argv[1], "more than 60000 flows: every flow needs a listener port of its own");
    }

    // POLYPHONY_NS3_DEBUG_FLOW=<id>: print that flow's sender events (window, state, segments).
    int64_t debugFlow = -1;
    if (const char* v = std::getenv("POLYPHONY_NS3_DEBUG_FLOW"))
    {
        char* end = nullptr;
        long long id = std::strtoll(v, &end, 10);
        if (end == v || *end != '\0' || id < 0)
        {
            Fail("POLYPHONY_NS3_DEBUG_FLOW", std::string("\"") + v + "\" is not a flow id");
        }
        debugFlow = id;
    }

    // TCP as pktsim assumes it.
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpDctcpFloor::GetTypeId()));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(kMss));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(Seconds(1)));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1u << 26));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1u << 26));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    // ns-3 computes rto = max(srtt + max(G, 4 rttvar), MinRto); Linux (tcp_set_rto) and pktsim
    // use srtt + max(4 rttvar, rto_min). A clock granularity G of 200 ms gives Linux's formula:
    // with a deep queue (srtt of hundreds of ms) ns-3's default timed out up to 200 ms sooner.
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::LimitedTransmit", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue("On"));
    Config::SetDefault("ns3::TcpDctcp::DctcpShiftG", DoubleValue(1.0 / 16));
    Config::SetDefault("ns3::TcpDctcp::DctcpAlphaOnInit", DoubleValue(1.0));
    Config::SetDefault("ns3::RttEstimator::InitialEstimation", TimeValue(Seconds(1)));

    const uint32_t nSwitches = ls ? t.racks + t.spines : 1;
    NodeContainer hostNodes, switchNodes;
    hostNodes.Create(hosts);
    switchNodes.Create(nSwitches);
    InternetStackHelper stack;
    Ipv4StaticRoutingHelper staticHelper;
    stack.SetRoutingHelper(staticHelper);
    stack.Install(hostNodes);
    stack.Install(switchNodes);

    std::vector<DrrPort*> switchPorts;
    uint32_t dummy = 0;
    // Connects a and b; returns the interface index on each side. Every egress gets the DRR disc.
    auto connect = [&](Ptr<Node> a, bool aSwitch, Ptr<Node> b, bool bSwitch, double mbps) {
        PointToPointHelper p2p;
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(std::llround(mbps * 1e6)))));
        p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(std::llround(t.delayUs * 1e3))));
        if (qdisc)
        {
            p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1p"));
        }
        else
        {
            p2p.SetQueue("ns3::ClassDrrDeviceQueue");
        }
        NetDeviceContainer d = p2p.Install(a, b);
        for (int side = 0; side < 2 && qdisc; side++)
        {
            // The one-packet device queue behind the queue disc should never drop.
            Ptr<PointToPointNetDevice> dev = DynamicCast<PointToPointNetDevice>(d.Get(side));
            dev->GetQueue()->TraceConnectWithoutContext("Drop", MakeCallback(&DeviceDrop));
            dev->TraceConnectWithoutContext("MacTxDrop", MakeCallback(&DeviceDrop));
        }
        std::pair<uint32_t, uint32_t> idx;
        for (int side = 0; side < 2; side++)
        {
            Ptr<Node> n = side == 0 ? a : b;
            bool sw = side == 0 ? aSwitch : bSwitch;
            Ptr<Ipv4> ip = n->GetObject<Ipv4>();
            uint32_t i = ip->AddInterface(d.Get(side));
            if (sw)
            {
                dummy++;
                ip->AddAddress(i,
                               Ipv4InterfaceAddress(Ipv4Address(0xAC100000u + dummy),
                                                    Ipv4Mask("255.255.255.255")));
            }
            ip->SetUp(i);
            (side == 0 ? idx.first : idx.second) = i;
            DrrPort* port = nullptr;
            if (qdisc)
            {
                TrafficControlHelper tch;
                tch.SetRootQueueDisc("ns3::ClassDrrQueueDisc");
                QueueDiscContainer qd = tch.Install(d.Get(side));
                Ptr<ClassDrrQueueDisc> disc = DynamicCast<ClassDrrQueueDisc>(qd.Get(0));
                disc->Configure(t.classes, sw ? t.portBuffer : UINT64_MAX, sw || nicMarking);
                port = &disc->port;
            }
            else
            {
                Ptr<PointToPointNetDevice> dev = DynamicCast<PointToPointNetDevice>(d.Get(side));
                Ptr<ClassDrrDeviceQueue> q = DynamicCast<ClassDrrDeviceQueue>(dev->GetQueue());
                q->Configure(t.classes, sw ? t.portBuffer : UINT64_MAX, sw || nicMarking, !sw);
                port = &q->port;
            }
            if (sw)
            {
                switchPorts.push_back(port);
            }
        }
        return idx;
    };
    // Host h's address for spine alias s.
    auto addr = [&](uint32_t h, uint32_t s) {
        uint32_t rack = ls ? h / t.hostsPerRack : 0;
        uint32_t i = ls ? h % t.hostsPerRack : h;
        return Ipv4Address((10u << 24) | (s << 16) | (rack << 8) | (i + 1));
    };
    auto routing = [&](Ptr<Node> n) { return staticHelper.GetStaticRouting(n->GetObject<Ipv4>()); };
    const Ipv4Mask host32("255.255.255.255");

    std::vector<uint32_t> hostIfOnSwitch(hosts);
    for (uint32_t h = 0; h < hosts; h++)
    {
        uint32_t leaf = ls ? h / t.hostsPerRack : 0;
        auto idx = connect(hostNodes.Get(h), false, switchNodes.Get(leaf), true, t.hostMbps);
        Ptr<Ipv4> ip = hostNodes.Get(h)->GetObject<Ipv4>();
        for (uint32_t s = 0; s < aliases; s++)
        {
            ip->AddAddress(idx.first, Ipv4InterfaceAddress(addr(h, s), host32));
        }
        routing(hostNodes.Get(h))->SetDefaultRoute(Ipv4Address("0.0.0.0"), idx.first);
        hostIfOnSwitch[h] = idx.second;
        for (uint32_t s = 0; s < aliases; s++)
        {
            routing(switchNodes.Get(leaf))->AddHostRouteTo(addr(h, s), idx.second);
        }
    }
    if (ls)
    {
        for (uint32_t r = 0; r < t.racks; r++)
        {
            for (uint32_t s = 0; s < t.spines; s++)
            {
                Ptr<Node> leaf = switchNodes.Get(r);
                Ptr<Node> spine = switchNodes.Get(t.racks + s);
                auto idx = connect(leaf, true, spine, true, t.fabricMbps);
                // Leaf: alias s of any other rack goes up through spine s.
                routing(leaf)->AddNetworkRouteTo(Ipv4Address((10u << 24) | (s << 16)),
                                                 Ipv4Mask("255.255.0.0"),
                                                 idx.first);
                // Spine: rack r's addresses go down to leaf r.
                for (uint32_t a = 0; a < aliases; a++)
                {
                    routing(spine)->AddNetworkRouteTo(
                        Ipv4Address((10u << 24) | (a << 16) | (r << 8)),
                        Ipv4Mask("255.255.255.0"),
                        idx.second);
                }
            }
        }
    }

    // Flows.
    g_flows.resize(t.flows.size());
    g_tsq.assign(t.flows.size(), nullptr);
    // pktsim's TSQ limit: 1 ms of the host's line rate, at least two full packets (wire bytes).
    const uint64_t tsqLimit =
        std::max<uint64_t>(static_cast<uint64_t>(std::llround(t.hostMbps * 1e6)) / 8 / 1000, 2 * (kMss + 66));
    // The device queue counts the NIC's bytes; under --qdisc it holds one packet.
    tsq = tsq && !qdisc;
    for (size_t i = 0; i < t.flows.size(); i++)
    {
        const FlowRec* r = &t.flows[i];
        FlowState* st = &g_flows[i];
        st->rec = r;
        uint32_t cls = 0;
        for (uint32_t c = 0; c < t.classes.size(); c++)
        {
            if (t.classes[c].dscp == r->dscp)
            {
                cls = c;
            }
        }
        uint32_t alias = 0;
        if (ls && r->src / t.hostsPerRack != r->dst / t.hostsPerRack)
        {
            uint64_t a = std::min(r->src, r->dst), b = std::max(r->src, r->dst);
            uint64_t h = Mix64(r->id ^ Mix64(((a << 32) | b) ^ t.salt));
            alias = h % t.spines;
        }
        uint16_t port = static_cast<uint16_t>(kFirstPort + i);
        if (debugFlow == static_cast<int64_t>(r->id))
        {
            g_debugPort = port;
        }
        g_portClass.push_back(static_cast<uint8_t>(cls));
        uint8_t tos = r->dscp << 2;
        uint32_t initcwnd = t.classes[cls].initcwnd;
        Simulator::Schedule(NanoSeconds(r->start), [=]() {
            Ptr<Node> dn = hostNodes.Get(r->dst);
            st->listener = Socket::CreateSocket(dn, TcpSocketFactory::GetTypeId());
            st->listener->SetIpTos(tos);
            st->listener->Bind(InetSocketAddress(addr(r->dst, alias), port));
            st->listener->Listen();
            st->listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                            MakeBoundCallback(&ReceiverAccept, st));
            Ptr<Node> sn = hostNodes.Get(r->src);
            if (tsq)
            {
                // What TcpL4Protocol::CreateSocket does, with the TSQ socket.
                Ptr<TcpL4Protocol> l4 = sn->GetObject<TcpL4Protocol>();
                Ptr<TsqTcpSocket> s = CreateObject<TsqTcpSocket>();
                s->SetNode(sn);
                s->SetTcp(l4);
                s->SetRtt(CreateObject<RttMeanDeviation>());
                s->cc = CreateObject<TcpDctcpFloor>();
                s->SetCongestionControlAlgorithm(s->cc);
                s->SetRecoveryAlgorithm(CreateObject<TcpClassicRecovery>());
                l4->AddSocket(s);
                s->limit = tsqLimit;
                g_tsq[i] = PeekPointer(s);
                st->sender = s;
            }
            else
            {
                st->sender = Socket::CreateSocket(sn, TcpSocketFactory::GetTypeId());
            }
            st->sender->SetAttribute("InitialCwnd", UintegerValue(initcwnd));
            st->sender->SetIpTos(tos);
            st->sender->Bind(InetSocketAddress(addr(r->src, alias), 0));
            st->sender->SetConnectCallback(MakeBoundCallback(&SenderConnected, st),
                                           MakeBoundCallback(&SenderConnected, st));
            st->sender->SetSendCallback(MakeBoundCallback(&SenderRoom, st));
            st->sender->SetRecvCallback(MakeBoundCallback(&SenderRecv, st));
            st->sender->TraceConnectWithoutContext("CongState", MakeCallback(&CountCongState));
            if (debugFlow == static_cast<int64_t>(r->id))
            {
                st->sender->TraceConnectWithoutContext(
                    "CongestionWindow",
                    MakeCallback(+[](uint32_t a, uint32_t b) {
                        std::cerr << Simulator::Now().GetNanoSeconds() << " cwnd " << a << " -> " << b
                                  << std::endl;
                    }));
                st->sender->TraceConnectWithoutContext(
                    "CongState",
                    MakeCallback(+[](TcpSocketState::TcpCongState_t a, TcpSocketState::TcpCongState_t b) {
                        std::cerr << Simulator::Now().GetNanoSeconds() << " state " << a << " -> " << b
                                  << std::endl;
                    }));
                st->sender->TraceConnectWithoutContext(
                    "Tx",
                    MakeCallback(+[](Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>) {
                        std::cerr << Simulator::Now().GetNanoSeconds() << " tx seq " << h.GetSequenceNumber()
                                  << " len " << p->GetSize() << " flags " << int(h.GetFlags()) << std::endl;
                    }));
                st->sender->TraceConnectWithoutContext(
                    "Rx",
                    MakeCallback(+[](Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>) {
                        std::cerr << Simulator::Now().GetNanoSeconds() << " rx ack " << h.GetAckNumber()
                                  << " len " << p->GetSize() << " flags " << int(h.GetFlags()) << std::endl;
                    }));
            }
            st->sender->Connect(InetSocketAddress(addr(r->dst, alias), port));
        });
    }
    uint64_t lastStart = t.flows.empty() ? 0 : t.flows.back().start;
    Simulator::Stop(NanoSeconds(lastStart) + Seconds(30));
    Simulator::Run();
    double simEnd = Simulator::Now().GetSeconds();

    std::ofstream out(argv[2]);
    if (!out)
    {
        Fail(argv[2], "cannot write");
    }
    out << "id,fct_ns\n";
    size_t done = 0;
    for (const auto& st : g_flows)
    {
        if (st.done)
        {
            out << st.rec->id << "," << st.fct << "\n";
            done++;
        }
    }
    uint64_t marks = 0, drops = 0;
    std::vector<uint64_t> perClass(t.classes.size(), 0), maxQ(t.classes.size(), 0);
    for (const DrrPort* d : switchPorts)
    {
        marks += d->marks;
        drops += d->drops;
        for (size_t c = 0; c < perClass.size(); c++)
        {
            perClass[c] += d->enqueued[c];
            maxQ[c] = std::max(maxQ[c], d->maxBytes[c]);
        }
    }
    std::cerr << "switch_enqueues_per_class";
    for (auto n : perClass)
    {
        std::cerr << " " << n;
    }
    std::cerr << "; switch_max_queue_bytes_per_class";
    for (auto n : maxQ)
    {
        std::cerr << " " << n;
    }
    std::cerr << "; ";
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    std::cerr << "flows " << t.flows.size() << " finished " << done << " switch_marks " << marks
              << " switch_drops " << drops << " device_drops " << g_deviceDrops << " rtos " << g_rtos
              << " fast_recoveries " << g_recoveries << " sim_end_s " << simEnd << " wall_s " << wall
              << std::endl;
    Simulator::Destroy();
    return 0;
}
