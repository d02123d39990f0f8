package phonegpt

import kotlinx.coroutines.GlobalScope
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import org.junit.Assert.assertArrayEquals
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Test
import java.io.File
import java.util.Random
import java.util.concurrent.TimeUnit

// The training session from the JVM: the worker logic trained in windows, killed (SIGKILL, a
// child JVM) at random moments and resumed ends with the same checkpoint, byte for byte, as
// the run that was never killed; cancelling the worker's coroutine stops the session; the
// memory plan refuses a budget nothing fits.

private const val kSessionSteps = 150L

/** The worker every test and the child JVM run: windows of [windowMs] over [checkpoint]. */
fun sessionWorker(checkpoint: String, windowMs: Long): SessionWorkerLogic =
    SessionWorkerLogic(
        checkpoint = checkpoint,
        openModel = { tinyModel(3) },
        tokens = { ids },
        trainConfig = trainConfig().copy(totalSteps = kSessionSteps, batchSize = 2, seqLen = 16),
        sessionConfig = TrainSessionConfig.default().copy(timeBudgetMs = windowMs, checkpointEveryMs = 0,
                                                           checkpointEverySteps = 3))

/** The child JVM: trains windows until the run is complete; prints "training" first. */
object SessionWorkerChild {
    @JvmStatic fun main(args: Array<String>) {
        val worker = sessionWorker(args[0], 100)
        println("training")
        System.out.flush()
        runBlocking { while (worker.doWork() != SessionWorkerLogic.WindowOutcome.DONE) Unit }
        System.exit(0)
    }
}

class TrainSessionTest {
    private fun childJvm(checkpoint: String): Process {
        val java = File(System.getProperty("java.home"), "bin/java").path
        val command = mutableListOf(java, "-Xmx128m", "-cp", System.getProperty("java.class.path"),
                                    "-Djava.library.path=" + System.getProperty("java.library.path"))
        System.getProperty("phonegpt.jni.library")?.let { command.add("-Dphonegpt.jni.library=$it") }
        command.addAll(listOf("phonegpt.SessionWorkerChild", checkpoint))
        return ProcessBuilder(command).redirectErrorStream(true).start()
    }

    @Test fun workerKilledAtRandomMomentsEndsAsTheUninterruptedRun() {
        val straight = File(tmp, "session_straight.pgc").apply { delete() }
        val killed = File(tmp, "session_killed.pgc").apply { delete() }
        val worker = sessionWorker(straight.path, 100)
        var windows = 0
        runBlocking { while (worker.doWork() != SessionWorkerLogic.WindowOutcome.DONE) windows++ }
        assertEquals(kSessionSteps, worker.lastReport!!.step)

        val random = Random(41)
        var kills = 0
        while (true) {
            val child = childJvm(killed.path)
            val out = child.inputStream.bufferedReader()
            assertEquals("training", out.readLine())
            if (kills < 3) {
                Thread.sleep(30L + random.nextInt(250))
                child.destroyForcibly()  // SIGKILL on Linux
                assertTrue(child.waitFor(30, TimeUnit.SECONDS))
                if (child.exitValue() == 0) break  // it finished before the kill
                kills++
                continue
            }
            assertTrue(child.waitFor(120, TimeUnit.SECONDS))
            assertEquals(out.readText(), 0, child.exitValue())
            break
        }
        assertTrue("kills: $kills", kills >= 2)
        assertArrayEquals(straight.readBytes(), killed.readBytes())
    }

    @Test fun cancellingTheWorkersCoroutineCancelsTheSession() {
        val path = File(tmp, "session_cancel.pgc").apply { delete() }
        val worker = sessionWorker(path.path, 0)  // no time budget: only the cancel stops it
        runBlocking {
            val job = GlobalScope.async { worker.doWork() }
            val giveUp = System.nanoTime() + 60_000_000_000L
            while (!path.exists() && System.nanoTime() < giveUp) delay(10)  // a first checkpoint: it is training
            assertTrue(path.exists())
            val t0 = System.nanoTime()
            job.cancel()
            try { job.await() } catch (e: kotlinx.coroutines.CancellationException) { Unit }
            assertTrue((System.nanoTime() - t0) / 1e6 < 5000)
        }
        // The cancelled run checkpointed: a new window continues from it.
        val again = sessionWorker(path.path, 50)
        runBlocking { again.doWork() }
        val r = again.lastReport!!
        assertTrue(r.step > r.stepsRun)
    }

    @Test fun conditionsReportAndMemoryPlan() {
        val path = File(tmp, "session_conditions.pgc").apply { delete() }
        tinyModel(3).use { model ->
            TrainSession(model, path.path, null, trainConfig().copy(totalSteps = 100000),
                         TrainSessionConfig.default().copy(timeBudgetMs = 80)).use { s ->
                s.setData(ids)
                s.setConditions(DeviceConditions.default().copy(thermalStatus = ThermalStatus.SEVERE))
                val paused = s.run()
                assertEquals(TrainStop.TIME, paused.stop)
                assertEquals(0L, paused.stepsRun)
                s.setConditions(DeviceConditions.default().copy(thermalStatus = ThermalStatus.MODERATE))
                val throttled = s.run()
                assertEquals(1, throttled.threads)
                assertTrue(throttled.stepsRun > 0)
                assertTrue(s.report().tokensPerSecond > 0)
                assertEquals(-1, s.coreRates()[0].first)
                assertThrows<InvalidArgumentException>(Status.INVALID_ARGUMENT) {
                    s.setConditions(DeviceConditions.default().copy(batteryPercent = 101))
                }
            }
        }
        val plan = MemoryPlanner.plan(tinyConfig(), trainConfig())
        assertTrue(plan.peakBytes > plan.activationBytes)
        assertEquals(4, plan.batchSize)
        val fit = MemoryPlanner.maxBatch(tinyConfig(), trainConfig(), plan.peakBytes)
        assertTrue(fit.batchSize >= 4)
        val e = assertThrows<OutOfMemoryException>(Status.OUT_OF_MEMORY) {
            MemoryPlanner.maxBatch(tinyConfig(), trainConfig(), 1000)
        }
        assertTrue(e.message!!, e.message!!.contains("budget"))
    }
}
