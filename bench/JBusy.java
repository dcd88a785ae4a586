// SPDX-License-Identifier: GPL-2.0
// make bench's java section: argv[1] threads spinning for argv[2] seconds about 20 Java frames deep
// (the lambda, down 19 deep, spin); C2 inlines a recursive call one level at most, so compiled code
// keeps about half of down's frames as frames of their own.
public class JBusy {
    static volatile long sink;

    static long spin(long end) {
        long x = 0;
        while (System.nanoTime() < end)
            for (int i = 0; i < 1000; i++)
                x += i ^ (x >>> 3);
        return x;
    }

    static long down(int d, long end) {
        if (d == 0)
            return spin(end);
        long r = down(d - 1, end);
        sink = r;
        return r + d;
    }

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        long end = System.nanoTime() + (long) (Double.parseDouble(args[1]) * 1e9);
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            ts[i] = new Thread(() -> sink = down(18, end), "jbusy");
            ts[i].start();
        }
        for (Thread t : ts)
            t.join();
    }
}
